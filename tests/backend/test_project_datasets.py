"""Data a user brings is uploaded as a project dataset (backend/datasets/), named
by a spec as ``dataset:<name>`` in a data-path field, checked at submission and handed only to a run of
the project whose spec names it, with the run's own token."""

from __future__ import annotations

import hashlib
import os
from typing import Any

import pytest
from sqlalchemy import select

from backend.db import get_engine, session_factory, session_scope
from backend.models import ProjectDataset, Run
from tests.backend.conftest import WORKER_TOKEN, Api

DATA = b'{"prompt": "2+2", "answer": "4"}\n' * 100


def _project_id(api: Api) -> int:
    return int(api.client.get("/api/v1/projects", headers=api.h()).json()[0]["id"])


def _upload(api: Api, name: str, data: bytes = DATA, token: str | None = None, pid: int | None = None) -> Any:
    pid = pid if pid is not None else _project_id(api)
    headers = {**api.h(token), "Content-Type": "application/octet-stream"}
    return api.client.put(f"/api/v1/projects/{pid}/datasets/{name}", content=data, headers=headers)


def _carma(path: str) -> dict[str, Any]:
    return {"data": {"source": "jsonl", "path": path}}


def _claim(api: Api, run_id: int) -> dict[str, str]:
    r = api.client.post(
        f"/api/v1/runs/{run_id}/claim",
        json={"worker": "w"},
        headers={"Authorization": f"Bearer {WORKER_TOKEN}"},
    )
    assert r.status_code == 200, r.text
    return {"Authorization": f"Bearer {r.json()['run_token']}"}


def test_members_upload_viewers_list_uploader_or_admin_delete(api: Api) -> None:
    pid = _project_id(api)
    member, other_member = api.user("meg"), api.user("max")
    viewer, project_admin = api.user("vic", role="viewer"), api.user("pat", role="admin")
    outsider = api.user("ozzie", project="elsewhere")
    assert _upload(api, "qa.jsonl", token=viewer).status_code == 403
    assert _upload(api, "qa.jsonl", token=outsider).status_code == 404
    r = _upload(api, "qa.jsonl", token=member)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["name"] == "qa.jsonl" and body["size"] == len(DATA) and body["uploaded_by"] == "meg"
    assert body["sha256"] == hashlib.sha256(DATA).hexdigest()
    listed = api.client.get(f"/api/v1/projects/{pid}/datasets", headers=api.h(viewer))
    assert listed.status_code == 200 and [d["name"] for d in listed.json()] == ["qa.jsonl"]
    assert api.client.get(f"/api/v1/projects/{pid}/datasets", headers=api.h(outsider)).status_code == 404
    url = f"/api/v1/projects/{pid}/datasets/qa.jsonl"
    assert api.client.delete(url, headers=api.h(viewer)).status_code == 403
    assert api.client.delete(url, headers=api.h(other_member)).status_code == 403  # not the uploader
    assert api.client.delete(url, headers=api.h(outsider)).status_code == 404
    assert api.client.delete(url, headers=api.h(member)).status_code == 204
    assert api.client.delete(url, headers=api.h(member)).status_code == 404
    assert _upload(api, "qa.jsonl", token=member).status_code == 200
    assert api.client.delete(url, headers=api.h(project_admin)).status_code == 204
    assert api.client.get(f"/api/v1/projects/{pid}/datasets", headers=api.h()).json() == []


def test_a_replacement_keeps_one_object_and_the_new_checksum(api: Api) -> None:
    assert _upload(api, "qa.jsonl").status_code == 200
    r = _upload(api, "qa.jsonl", b"second\n")
    assert r.status_code == 200 and r.json()["sha256"] == hashlib.sha256(b"second\n").hexdigest()
    store = api.settings.artifact_url.removeprefix("file://")
    folder = f"{store}/datasets/project-{_project_id(api)}/qa.jsonl"
    assert os.listdir(folder) == [hashlib.sha256(b"second\n").hexdigest()]


@pytest.mark.parametrize("name", [".hidden", "a..b", "-x", "a b", "x" * 129, "..", "a%2Fb", "a\\b"])
def test_dataset_names_are_file_names(api: Api, name: str) -> None:
    assert _upload(api, name).status_code in (404, 405, 422)


def test_an_upload_over_the_limit_is_refused(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api.settings, "dataset_max_bytes", 10)
    r = _upload(api, "big.jsonl", b"x" * 11)
    assert r.status_code == 413
    assert api.client.get(f"/api/v1/projects/{_project_id(api)}/datasets", headers=api.h()).json() == []


def test_a_chunked_upload_is_cut_at_the_limit(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api.settings, "dataset_max_bytes", 1000)

    def body() -> Any:
        for _ in range(5):
            yield b"x" * 400

    pid = _project_id(api)
    headers = {**api.h(), "Content-Type": "application/octet-stream"}
    r = api.client.put(f"/api/v1/projects/{pid}/datasets/big.jsonl", content=body(), headers=headers)
    assert r.status_code == 413
    assert api.client.get(f"/api/v1/projects/{pid}/datasets", headers=api.h()).json() == []
    store = api.settings.artifact_url.removeprefix("file://")
    assert not any(f.startswith(".upload-") for f in os.listdir(f"{store}/datasets/project-{pid}"))


def test_another_projects_dataset_is_not_found(api: Api) -> None:
    other = api.client.post("/api/v1/projects", json={"name": "vault"}, headers=api.h()).json()
    assert _upload(api, "secret.jsonl", pid=other["id"]).status_code == 200
    member = api.user("meg")  # of the default project only
    url = f"/api/v1/projects/{other['id']}/datasets"
    assert api.client.get(url, headers=api.h(member)).status_code == 404
    assert api.client.delete(f"{url}/secret.jsonl", headers=api.h(member)).status_code == 404
    # a spec of the default project cannot name it
    r = api.submit(_carma("dataset:secret.jsonl"), kind="carma")
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "spec", "data", "path"]


def test_a_spec_names_a_dataset_of_its_project(api: Api) -> None:
    r = api.submit(_carma("dataset:qa.jsonl"), kind="carma")
    assert r.status_code == 422, r.text
    error = r.json()["errors"][0]
    assert error["loc"] == ["body", "spec", "data", "path"] and error["type"] == "dataset_not_found"
    for hostile in ("dataset:../x", "dataset:/etc/passwd", "dataset:a/b", "dataset:"):
        r = api.submit(_carma(hostile), kind="carma")
        assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "spec", "data", "path"]
    _upload(api, "qa.jsonl")
    assert api.submit(_carma("dataset:qa.jsonl"), kind="carma").status_code == 201


def test_the_run_token_reads_only_the_datasets_its_spec_names(api: Api) -> None:
    _upload(api, "qa.jsonl")
    _upload(api, "other.jsonl", b"other\n")
    run = api.submit(_carma("dataset:qa.jsonl"), kind="carma").json()["runs"][0]
    plain = api.submit({}).json()["runs"][0]
    h = _claim(api, run["id"])
    url = f"/api/v1/runs/{run['id']}/datasets"
    r = api.client.get(f"{url}/qa.jsonl", headers=h)
    assert r.status_code == 200 and r.content == DATA
    assert r.headers["x-checksum-sha256"] == hashlib.sha256(DATA).hexdigest()
    assert api.client.get(f"{url}/other.jsonl", headers=h).status_code == 403  # not named by its spec
    h2 = _claim(api, plain["id"])
    assert api.client.get(f"{url}/qa.jsonl", headers=h2).status_code == 403  # another run's token
    assert api.client.get(f"{url}/qa.jsonl", headers=api.h()).status_code == 403  # a user
    worker = {"Authorization": f"Bearer {WORKER_TOKEN}"}
    assert api.client.get(f"{url}/qa.jsonl", headers=worker).status_code == 403


def test_a_spec_edited_in_the_database_still_cannot_reach_another_projects_dataset(api: Api) -> None:
    other = api.client.post("/api/v1/projects", json={"name": "vault"}, headers=api.h()).json()
    assert _upload(api, "vault.jsonl", b"vault\n", pid=other["id"]).status_code == 200
    _upload(api, "qa.jsonl")
    run = api.submit(_carma("dataset:qa.jsonl"), kind="carma").json()["runs"][0]
    factory = session_factory(get_engine(api.settings.database_url))
    with session_scope(factory) as session:
        stored = session.get(Run, run["id"])
        assert stored is not None
        stored.spec = {**stored.spec, "data": {**stored.spec["data"], "path": "dataset:vault.jsonl"}}
    h = _claim(api, run["id"])
    r = api.client.get(f"/api/v1/runs/{run['id']}/datasets/vault.jsonl", headers=h)
    assert r.status_code == 404 and r.content != b"vault\n"
    with session_scope(factory) as session:
        assert len(session.scalars(select(ProjectDataset)).all()) == 2
