"""What one object may hold, on SQLite and Postgres: a run's or an experiment's comments, reviews and tags, a
claim's comments, reviews and versions, a report's revisions, comments, reviews and share links, a project's
saved views and secrets, a user's live API tokens. At the cap the next one is a 409 ``<sort>_full`` naming
the owner and the cap, and nothing stored is lost; its list reads back exactly the ones kept. Each cap is
shrunk to 2 here (the real ones: backend/projects/service.py, backend/auth/service.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from backend.auth import service as auth_service
from backend.claims import service as claims_service
from backend.projects import service as projects_service
from backend.reports import service as reports_service
from backend.reviews import service as reviews_service
from backend.secrets import service as secrets_service
from backend.views import service as views_service
from tests.backend.conftest import USER_PASSWORD, Api

pytestmark = pytest.mark.dialect_matrix

CAP = 2
_JWT: list[str] = []  # the token owner's login, from _case to the test


@pytest.fixture(autouse=True)
def _small_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in (reviews_service, claims_service, reports_service, views_service, secrets_service):
        for name in (
            "MAX_COMMENTS",
            "MAX_REVIEWS",
            "MAX_TAGS",
            "MAX_VERSIONS",
            "MAX_REVISIONS",
            "MAX_SHARES",
        ):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, CAP)
    monkeypatch.setattr(views_service, "MAX_VIEWS", CAP)
    monkeypatch.setattr(secrets_service, "MAX_SECRETS", CAP)
    monkeypatch.setattr(auth_service, "MAX_TOKENS", CAP)
    assert projects_service.MAX_COMMENTS == 1_000  # the real cap is untouched where it is defined


def _ok(res: Any) -> Any:
    assert res.status_code < 300, res.text
    return res.json()


def _pid(api: Api) -> int:
    projects = _ok(api.client.get("/api/v1/projects", headers=api.h()))
    return int(next(p["id"] for p in projects if p["name"] == "default"))


def _experiment(api: Api) -> dict[str, Any]:
    created = _ok(api.submit(name="capped"))
    return dict(_ok(api.client.get(f"/api/v1/experiments/{created['id']}", headers=api.h())))


def _claim(api: Api) -> int:
    definition = {
        "section": "001 §4.2",
        "arms": [{"name": "a", "query": "params.lr = 0.1"}, {"name": "b", "query": "params.lr = 0.2"}],
        "metric": "acc",
        "direction": "greater",
    }
    body = {"name": "capped", "definition": definition}
    return int(_ok(api.client.post(f"/api/v1/projects/{_pid(api)}/claims", json=body, headers=api.h()))["id"])


def _report(api: Api) -> int:
    body = {"title": "capped", "blocks": [{"id": "b", "type": "markdown", "text": "x"}]}
    report = _ok(api.client.post(f"/api/v1/projects/{_pid(api)}/reports", json=body, headers=api.h()))
    _ok(api.client.post(f"/api/v1/reports/{report['id']}/publish", json={"base_version": 1}, headers=api.h()))
    return int(report["id"])


def _case(api: Api, which: str) -> tuple[Callable[[int], Any], str, str]:
    """``add(i)`` (a response), the list read back after (with ``api.h()``; tokens, the user's), and the
    409's owner."""
    c, h = api.client, api.h()
    if which in {"run comments", "run tags", "experiment comments", "experiment reviews", "experiment tags"}:
        exp = _experiment(api)
        eid, rid = exp["id"], exp["runs"][0]["id"]
        return {
            "run comments": (
                lambda i: c.post(f"/api/v1/runs/{rid}/comments", json={"body": f"c{i}"}, headers=h),
                f"/api/v1/runs/{rid}/comments",
                f"run {rid}",
            ),
            "run tags": (
                lambda i: c.put(f"/api/v1/runs/{rid}/tags/t{i}", headers=h),
                f"/api/v1/runs/{rid}",
                f"run {rid}",
            ),
            "experiment comments": (
                lambda i: c.post(f"/api/v1/experiments/{eid}/comments", json={"body": f"c{i}"}, headers=h),
                f"/api/v1/experiments/{eid}/comments",
                f"experiment {eid}",
            ),
            "experiment reviews": (
                lambda i: c.put(f"/api/v1/experiments/{eid}/review", json={"state": "approved"}, headers=h),
                f"/api/v1/experiments/{eid}/reviews",
                f"experiment {eid}",
            ),
            "experiment tags": (
                lambda i: c.put(f"/api/v1/experiments/{eid}/tags/t{i}", headers=h),
                f"/api/v1/experiments/{eid}",
                f"experiment {eid}",
            ),
        }[which]
    if which.startswith("claim"):
        cid = _claim(api)

        def new_version(i: int) -> Any:
            definition = _ok(c.get(f"/api/v1/claims/{cid}", headers=h))["definition"]
            definition["section"] = f"001 §4.{i + 3}"
            return c.patch(f"/api/v1/claims/{cid}", json={"definition": definition}, headers=h)

        return {
            "claim comments": (
                lambda i: c.post(f"/api/v1/claims/{cid}/comments", json={"body": f"c{i}"}, headers=h),
                f"/api/v1/claims/{cid}/comments",
                f"claim {cid}",
            ),
            "claim reviews": (
                lambda i: c.put(f"/api/v1/claims/{cid}/review", json={"state": "approved"}, headers=h),
                f"/api/v1/claims/{cid}/reviews",
                f"claim {cid}",
            ),
            # version 1 is the claim's first: one more edit fills a cap of 2
            "claim versions": (new_version, f"/api/v1/claims/{cid}/versions", f"claim {cid}"),
        }[which]
    if which.startswith("report"):
        rid = _report(api)  # one revision already
        return {
            "report revisions": (
                lambda i: c.post(f"/api/v1/reports/{rid}/publish", json={"base_version": 1}, headers=h),
                f"/api/v1/reports/{rid}/revisions",
                f"report {rid}",
            ),
            "report comments": (
                lambda i: c.post(
                    f"/api/v1/reports/{rid}/comments", json={"block_id": "b", "body": "c"}, headers=h
                ),
                f"/api/v1/reports/{rid}/comments",
                f"report {rid}",
            ),
            "report reviews": (
                lambda i: c.post(
                    f"/api/v1/reports/{rid}/revisions/1/reviews", json={"state": "approved"}, headers=h
                ),
                f"/api/v1/reports/{rid}/reviews",
                f"report {rid}",
            ),
            "report shares": (
                lambda i: c.post(f"/api/v1/reports/{rid}/revisions/1/shares", json={}, headers=h),
                f"/api/v1/reports/{rid}/shares",
                f"report {rid}",
            ),
        }[which]
    pid = _pid(api)
    if which == "project views":
        return (
            lambda i: c.post(
                f"/api/v1/projects/{pid}/views", json={"name": f"v{i}", "page": "runs"}, headers=h
            ),
            f"/api/v1/projects/{pid}/views",
            f"project {pid}",
        )
    if which == "project secrets":
        return (
            lambda i: c.put(f"/api/v1/projects/{pid}/secrets/S{i}", json={"value": "x"}, headers=h),
            f"/api/v1/projects/{pid}/secrets",
            f"project {pid}",
        )
    assert which == "user tokens"
    api.user("tina")
    jwt = _ok(c.post("/api/v1/auth/login", json={"username": "tina", "password": USER_PASSWORD}))[
        "access_token"
    ]
    for token in _ok(c.get("/api/v1/auth/tokens", headers=api.h(jwt))):  # the one api.user made
        assert c.delete(f"/api/v1/auth/tokens/{token['id']}", headers=api.h(jwt)).status_code == 204
    _JWT.append(jwt)
    return (
        lambda i: c.post("/api/v1/auth/tokens", json={"name": f"k{i}"}, headers=api.h(jwt)),
        "/api/v1/auth/tokens",
        "user 'tina'",
    )


# the ones the owner holds before the test adds any
BEFORE = {"claim versions": 1, "report revisions": 1}


@pytest.mark.parametrize(
    "which",
    [
        "run comments",
        "run tags",
        "experiment comments",
        "experiment reviews",
        "experiment tags",
        "claim comments",
        "claim reviews",
        "claim versions",
        "report revisions",
        "report comments",
        "report reviews",
        "report shares",
        "project views",
        "project secrets",
        "user tokens",
    ],
)
@pytest.mark.heavy
def test_an_object_holds_at_most_its_cap(api: Api, which: str) -> None:
    add, listing, owner = _case(api, which)
    headers = api.h(_JWT.pop()) if which == "user tokens" else api.h()
    for i in range(CAP - BEFORE.get(which, 0)):
        _ok(add(i))
    res = add(99)
    assert res.status_code == 409, res.text
    body = res.json()
    sort = owner.split()[0]
    assert body["code"] == "conflict"
    assert body["detail"].startswith(f"{owner} holds {CAP} "), body["detail"]
    assert f"the most a {sort} may hold is {CAP}" in body["detail"]
    assert body["errors"][0]["type"] == f"{sort}_full"
    # nothing kept was lost, and the refused one was not kept
    listed = _ok(api.client.get(listing, headers=headers))
    assert len(listed["tags"] if which.endswith("tags") else listed) == CAP
