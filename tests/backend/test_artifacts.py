"""A run's artifacts through the API: the worker uploads while its attempt owns the run, project members
list and download (streamed, with length, type and disposition), other projects get 404, and every path
that could leave the run's folder is a 422 naming the path (dot segments, absolute, encoded, backslash,
control characters, a symbolic link out of the store)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from backend.artifacts import service
from backend.errors import Invalid
from tests.backend.conftest import Api

CHECKPOINT = b"\x80\x02checkpoint bytes" * 1000


def _running_run(api: Api) -> dict[str, Any]:
    run = api.submit({}).json()["runs"][0]
    claimed = api.client.post(
        f"/api/v1/runs/{run['id']}/claim", json={"attempt": 1, "worker": "w"}, headers=api.worker
    )
    assert claimed.status_code == 200, claimed.text
    result: dict[str, Any] = claimed.json()
    return result


def _put(api: Api, run_id: int, path: str, body: bytes, attempt: int = 1, headers: Any = None) -> Any:
    return api.client.put(
        f"/api/v1/runs/{run_id}/artifacts/{path}",
        params={"attempt": attempt},
        content=body,
        headers={**(headers or api.worker), "Content-Type": "application/octet-stream"},
    )


def _store_folder(api: Api, run_id: int) -> Path:
    assert api.settings.artifact_url.startswith("file://")
    return Path(api.settings.artifact_url.removeprefix("file://")) / "runs" / f"run-{run_id}"


def test_worker_uploads_then_members_list_and_download(api: Api) -> None:
    run = _running_run(api)
    rid = run["id"]
    up = _put(api, rid, "checkpoints/step-10.pt", CHECKPOINT)
    assert up.status_code == 200, up.text
    assert up.json()["size"] == len(CHECKPOINT) and up.json()["kind"] == "checkpoint"
    assert _put(api, rid, "outputs/model/config.json", b'{"d_model": 8}').status_code == 200
    assert _put(api, rid, "model/step-10.pt", CHECKPOINT).status_code == 200

    viewer = api.user("vic", role="viewer")
    listing = api.client.get(f"/api/v1/runs/{rid}/artifacts", headers=api.h(viewer))
    assert listing.status_code == 200, listing.text
    body = listing.json()
    assert [(i["path"], i["kind"], i["size"]) for i in body["items"]] == [
        ("checkpoints/step-10.pt", "checkpoint", len(CHECKPOINT)),
        ("model/step-10.pt", "model", len(CHECKPOINT)),
        ("outputs/model/config.json", "output", 14),
    ]
    assert body["count"] == 3 and body["total_size"] == 2 * len(CHECKPOINT) + 14
    assert all(i["modified"] for i in body["items"])

    got = api.client.get(f"/api/v1/runs/{rid}/artifacts/checkpoints/step-10.pt", headers=api.h(viewer))
    assert got.status_code == 200
    assert got.content == CHECKPOINT
    assert got.headers["content-length"] == str(len(CHECKPOINT))
    assert got.headers["content-disposition"].startswith('attachment; filename="step-10.pt"')
    assert "gzip" not in got.headers.get("content-encoding", "")
    config = api.client.get(f"/api/v1/runs/{rid}/artifacts/outputs/model/config.json", headers=api.h(viewer))
    assert config.headers["content-type"].startswith("application/json") and config.json() == {"d_model": 8}


def test_an_upload_replaces_the_file_atomically_and_leaves_no_temporary_file(api: Api) -> None:
    rid = _running_run(api)["id"]
    assert _put(api, rid, "outputs/a.txt", b"first").status_code == 200
    assert _put(api, rid, "outputs/a.txt", b"second, longer").status_code == 200
    got = api.client.get(f"/api/v1/runs/{rid}/artifacts/outputs/a.txt", headers=api.h())
    assert got.content == b"second, longer"
    names = [p.name for p in _store_folder(api, rid).rglob("*")]
    assert sorted(names) == ["a.txt", "outputs"]


def test_other_projects_get_404_and_viewers_cannot_write(api: Api) -> None:
    rid = _running_run(api)["id"]
    assert _put(api, rid, "outputs/a.txt", b"x").status_code == 200
    outsider = api.user("ozzie", project="elsewhere")
    for url in (f"/api/v1/runs/{rid}/artifacts", f"/api/v1/runs/{rid}/artifacts/outputs/a.txt"):
        assert api.client.get(url, headers=api.h(outsider)).status_code == 404
    assert api.client.get(f"/api/v1/runs/{rid}/artifacts/outputs/a.txt").status_code == 401
    viewer = api.user("vic", role="viewer")
    member = api.user("meg", role="member")
    assert _put(api, rid, "outputs/b.txt", b"x", headers=api.h(viewer)).status_code == 403
    assert _put(api, rid, "outputs/b.txt", b"x", headers=api.h(member)).status_code == 403
    assert _put(api, rid, "outputs/b.txt", b"x", headers=api.h(outsider)).status_code == 404
    delete = api.client.delete(
        f"/api/v1/runs/{rid}/artifacts/outputs/a.txt", params={"attempt": 1}, headers=api.h(member)
    )
    assert delete.status_code == 403
    missing = api.client.get(f"/api/v1/runs/{rid}/artifacts/outputs/none.txt", headers=api.h())
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"


def test_a_stale_attempt_cannot_write_and_the_owner_deletes(api: Api) -> None:
    rid = _running_run(api)["id"]
    assert _put(api, rid, "checkpoints/step-1.pt", b"1").status_code == 200
    assert _put(api, rid, "checkpoints/step-2.pt", b"2", attempt=2).status_code == 409
    url = f"/api/v1/runs/{rid}/artifacts/checkpoints/step-1.pt"
    assert api.client.delete(url, params={"attempt": 2}, headers=api.worker).status_code == 409
    assert api.client.delete(url, params={"attempt": 1}, headers=api.worker).status_code == 204
    assert api.client.delete(url, params={"attempt": 1}, headers=api.worker).status_code == 404
    assert api.client.get(f"/api/v1/runs/{rid}/artifacts", headers=api.h()).json()["items"] == []
    finished = api.client.post(
        f"/api/v1/runs/{rid}/finish", json={"attempt": 1, "status": "succeeded"}, headers=api.worker
    )
    assert finished.status_code == 200
    assert _put(api, rid, "outputs/late.txt", b"x").status_code == 409


@pytest.mark.parametrize(
    "raw_path",
    [
        "%2e%2e/%2e%2e/secret.txt",  # '..' percent-encoded: the server decodes it to ../../secret.txt
        "outputs/%2e%2e/%2e%2e/%2e%2e/secret.txt",
        "outputs/..%2f..%2f..%2fsecret.txt",  # an encoded slash
        "outputs/%252e%252e/secret.txt",  # encoded twice: '%2e%2e' after one decoding
        "%2fetc/passwd",  # absolute
        "/etc/passwd",  # absolute (a double slash in the URL)
        "outputs/..%5c..%5csecret.txt",  # backslashes
        "C:/Windows/win.ini",
        "outputs//a.txt",  # an empty segment
        "outputs/%2e/a.txt",  # a "." segment, encoded (a client would drop a plain one)
        "outputs/a%09.txt",  # a control character (a tab)
        "secret.txt",  # not under checkpoints/, outputs/ or model/
        "outputs",
    ],
)
def test_path_traversal_is_refused_with_422_naming_the_path(api: Api, raw_path: str) -> None:
    rid = _running_run(api)["id"]
    outside = Path(api.settings.artifact_url.removeprefix("file://")).parent / "secret.txt"
    outside.parent.mkdir(parents=True, exist_ok=True)
    outside.write_text("not an artifact")
    url = f"/api/v1/runs/{rid}/artifacts/{raw_path}"
    for method in ("GET", "PUT", "DELETE"):
        response = api.client.request(
            method,
            url,
            params={"attempt": 1},
            headers=api.worker if method != "GET" else api.h(),
            content=b"x",
        )
        assert response.status_code == 422, (method, raw_path, response.status_code, response.text)
        body = response.json()
        assert body["code"] == "invalid" and body["errors"][0]["loc"] == ["path", "path"], body
    assert outside.read_text() == "not an artifact"


def test_a_symbolic_link_out_of_the_store_is_refused(api: Api, tmp_path: Path) -> None:
    rid = _running_run(api)["id"]
    assert _put(api, rid, "outputs/real.txt", b"inside").status_code == 200
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the store")
    outputs = _store_folder(api, rid) / "outputs"
    os.symlink(secret, outputs / "leak.txt")
    os.symlink(tmp_path, outputs / "dir")
    os.symlink(outputs / "real.txt", outputs / "alias.txt")  # a link that stays inside is a file like any
    listing = api.client.get(f"/api/v1/runs/{rid}/artifacts", headers=api.h()).json()
    assert [i["path"] for i in listing["items"]] == ["outputs/alias.txt", "outputs/real.txt"]
    for path in ("outputs/leak.txt", "outputs/dir/secret.txt"):
        got = api.client.get(f"/api/v1/runs/{rid}/artifacts/{path}", headers=api.h())
        assert got.status_code == 422 and "symbolic link" in got.json()["detail"], got.text
        assert _put(api, rid, path, b"overwritten").status_code == 422
    assert secret.read_text() == "outside the store"
    alias = api.client.get(f"/api/v1/runs/{rid}/artifacts/outputs/alias.txt", headers=api.h())
    assert alias.content == b"inside"


def test_a_run_read_ticket_opens_a_download_of_its_run_only(api: Api) -> None:
    rid = _running_run(api)["id"]
    other = _running_run(api)["id"]
    assert _put(api, rid, "outputs/a.txt", b"ticketed").status_code == 200
    ticket = api.client.post(f"/api/v1/runs/{rid}/read-ticket", headers=api.h()).json()["ticket"]
    got = api.client.get(f"/api/v1/runs/{rid}/artifacts/outputs/a.txt", params={"ticket": ticket})
    assert got.status_code == 200 and got.content == b"ticketed"
    # the deprecated path of the same route answers the same kind of ticket
    old = api.client.post(f"/api/v1/runs/{rid}/events/ticket", headers=api.h()).json()["ticket"]
    got = api.client.get(f"/api/v1/runs/{rid}/artifacts/outputs/a.txt", params={"ticket": old})
    assert got.status_code == 200 and got.content == b"ticketed"
    assert (
        api.client.get(f"/api/v1/runs/{other}/artifacts/outputs/a.txt", params={"ticket": ticket}).status_code
        == 401
    )
    # a ticket opens downloads and event streams, not the listing or any other route
    assert api.client.get(f"/api/v1/runs/{rid}/artifacts", params={"ticket": ticket}).status_code == 401


def test_clean_path_refuses_what_could_leave_the_folder() -> None:
    assert service.clean_path("outputs/model/config.json") == "outputs/model/config.json"
    assert service.clean_path("checkpoints/step-3.pt") == "checkpoints/step-3.pt"
    for bad in (
        "",
        "../x",
        "outputs/../../x",
        "/x",
        "\\\\server\\share",
        "outputs\\x",
        "~/x",
        "outputs/%2e",
        "outputs/\x00",
    ):
        with pytest.raises(Invalid):
            service.clean_path(bad)
    with pytest.raises(Invalid):
        service.clean_path("outputs/" + "a" * 256)


def test_a_file_used_as_a_folder_is_a_conflict_not_a_server_error(api: Api) -> None:
    rid = _running_run(api)["id"]
    assert _put(api, rid, "outputs/a.txt", b"a file").status_code == 200
    under_file = _put(api, rid, "outputs/a.txt/b.txt", b"x")
    assert under_file.status_code == 409 and under_file.json()["code"] == "conflict", under_file.text
    assert _put(api, rid, "outputs", b"x").status_code == 422
    assert _put(api, rid, "outputs/d/x.txt", b"x").status_code == 200
    over_folder = _put(api, rid, "outputs/d", b"x")
    assert over_folder.status_code == 409 and over_folder.json()["code"] == "conflict", over_folder.text
    got = api.client.get(f"/api/v1/runs/{rid}/artifacts/outputs/a.txt/b.txt", headers=api.h())
    assert got.status_code == 404
