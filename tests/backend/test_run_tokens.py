"""A run's process holds a token scoped to its run and attempt; the worker token only claims and
releases. Every route of the app is walked (from its routes, not a hand list) with each kind of token."""

from __future__ import annotations

import re
from typing import Any

import pytest
from sqlalchemy import update

from backend.auth.dependencies import RUN_OPERATIONS, WORKER_OPERATIONS
from backend.auth.security import RUN_TOKEN_PREFIX, make_run_token
from backend.db import get_engine, session_factory, session_scope
from backend.models import Run
from common.runs import FINISHED_STATUSES
from tests.backend.conftest import WORKER_TOKEN, Api

# SQL is the subject (token rows bound to attempts): SQLite and Postgres
pytestmark = pytest.mark.dialect_matrix


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _claim(api: Api, run_id: int, attempt: int | None = 1) -> str:
    r = api.client.post(
        f"/api/v1/runs/{run_id}/claim",
        json={"attempt": attempt, "worker": "w"},
        headers=_bearer(WORKER_TOKEN),
    )
    assert r.status_code == 200, r.text
    token: str = r.json()["run_token"]
    assert token.startswith(RUN_TOKEN_PREFIX)
    return token


def _two_runs(api: Api) -> tuple[int, int]:
    runs = api.submit({}, sweep={"grid": {"seed": [1, 2]}}).json()["runs"]
    return runs[0]["id"], runs[1]["id"]


def _routes(api: Api) -> list[tuple[str, str, str]]:
    """(operation id, method, path template) of every route, from the app's own OpenAPI document."""
    document = api.client.app.openapi()  # type: ignore[attr-defined]
    routes = [
        (operation["operationId"], method.upper(), path)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
    ]
    assert len(routes) > 40  # the walk sees the whole API
    return routes


def _call(api: Api, route: tuple[str, str, str], headers: dict[str, str], run_id: int) -> Any:
    """Call ``route`` with every path parameter filled (a run id with ``run_id``, any other id with 1)."""
    _, method, template = route
    path = template.replace("{run_id}", str(run_id))
    path = re.sub(r"\{path\}", "outputs/x.txt", path)
    path = re.sub(r"\{[a-z_]+_id\}", "1", path)
    path = re.sub(r"\{[a-z_]+\}", "x", path)
    body = {} if method in ("POST", "PUT", "PATCH") else None
    return api.client.request(method, path, headers=headers, json=body)


def _public(api: Api, route: tuple[str, str, str], run_id: int) -> bool:
    """A route that answers without any credential (health, login)."""
    return _call(api, route, {}, run_id).status_code != 401


@pytest.mark.heavy
def test_run_token_reaches_no_route_outside_its_run(api: Api) -> None:
    own, other = _two_runs(api)
    token = _claim(api, own)
    checked = 0
    for route in _routes(api):
        if _public(api, route, own):
            continue
        op = route[0]
        if op in RUN_OPERATIONS:
            # its own run's routes are open to it; the same route on another run is not
            r = _call(api, route, _bearer(token), other)
            assert r.status_code == 403, (op, r.status_code, r.text)
        else:
            r = _call(api, route, _bearer(token), own)
            assert r.status_code == 403, (op, r.status_code, r.text)
        checked += 1
    assert checked > 40


@pytest.mark.heavy
def test_worker_token_only_claims_and_releases(api: Api) -> None:
    own, _ = _two_runs(api)
    for route in _routes(api):
        if route[0] in WORKER_OPERATIONS or _public(api, route, own):
            continue
        r = _call(api, route, _bearer(WORKER_TOKEN), own)
        assert r.status_code == 403, (route[0], r.status_code, r.text)


def test_run_token_writes_and_reads_its_own_run(api: Api) -> None:
    own, _ = _two_runs(api)
    h = _bearer(_claim(api, own))
    url = f"/api/v1/runs/{own}"
    assert api.client.post(f"{url}/heartbeat", json={"attempt": 1}, headers=h).status_code == 200
    body = {"attempt": 1, "points": [{"key": "loss", "step": 1, "value": 0.5}]}
    assert api.client.post(f"{url}/metrics", json=body, headers=h).status_code == 200
    assert api.client.post(f"{url}/logs", json={"lines": ["hi"], "attempt": 1}, headers=h).status_code == 204
    assert api.client.get(url, headers=h).json()["status"] == "running"
    assert api.client.get(f"{url}/metric-keys", headers=h).json() == ["loss"]
    r = api.client.put(f"{url}/artifacts/outputs/a.txt?attempt=1", content=b"x", headers=h)
    assert r.status_code in (200, 201), r.text
    assert api.client.get(f"{url}/artifacts/outputs/a.txt", headers=h).content == b"x"
    fin = {"attempt": 1, "status": "succeeded"}
    assert api.client.post(f"{url}/finish", json=fin, headers=h).status_code == 200
    # a finish re-sent after a lost answer is answered as before; anything else dies with the attempt
    assert api.client.post(f"{url}/finish", json=fin, headers=h).status_code == 200
    assert api.client.post(f"{url}/heartbeat", json={"attempt": 1}, headers=h).status_code == 409
    assert api.client.get(url, headers=h).status_code == 409
    assert api.client.post(f"{url}/metrics", json=body, headers=h).status_code == 409


def test_run_token_dies_with_its_attempt(api: Api) -> None:
    own, _ = _two_runs(api)
    first = _bearer(_claim(api, own))
    url = f"/api/v1/runs/{own}"
    # the worker gives the run back: attempt 2 is queued, then claimed with a token of its own
    assert api.client.post(f"{url}/release", json={"attempt": 1}, headers=first).status_code == 200
    assert api.client.get(url, headers=first).status_code == 409
    second = _bearer(_claim(api, own, None))  # null attempt: the run's current one
    assert api.client.get(url, headers=second).json()["attempt"] == 2
    body = {"attempt": 1, "points": [{"key": "loss", "step": 1, "value": 9.0}]}
    assert api.client.post(f"{url}/metrics", json=body, headers=first).status_code == 409
    assert api.client.post(f"{url}/heartbeat", json={"attempt": 2}, headers=first).status_code == 409


def test_forged_expired_and_foreign_tokens_are_refused(api: Api) -> None:
    own, _ = _two_runs(api)
    token = _claim(api, own)
    url = f"/api/v1/runs/{own}"
    tampered = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    assert api.client.get(url, headers=_bearer(tampered)).status_code == 401
    forged, _ = make_run_token(own, 1, "another-signing-key-0123456789-abcdef", 60)
    assert api.client.get(url, headers=_bearer(forged)).status_code == 401
    expired, _ = make_run_token(own, 1, api.settings.secret_key, -10)
    assert api.client.get(url, headers=_bearer(expired)).status_code == 401
    # a run token is no login: without its prefix it is not accepted as one
    bare = token.removeprefix(RUN_TOKEN_PREFIX)
    assert api.client.get("/api/v1/auth/me", headers=_bearer(bare)).status_code == 401


@pytest.mark.parametrize("status", FINISHED_STATUSES)
def test_a_run_token_reads_only_the_source_runs_its_spec_names(api: Api, status: str) -> None:
    source, reader = _two_runs(api)
    h_source = _bearer(_claim(api, source))
    put = api.client.put(
        f"/api/v1/runs/{source}/artifacts/outputs/w.txt?attempt=1", content=b"weights", headers=h_source
    )
    assert put.status_code in (200, 201)
    api.client.post(f"/api/v1/runs/{source}/finish", json={"attempt": 1, "status": status}, headers=h_source)
    # the reader's spec names the source run (as a fine-tuning spec's init.run_id does)
    factory = session_factory(get_engine(api.settings.database_url))
    with session_scope(factory) as session:
        session.execute(
            update(Run)
            .where(Run.id == reader)
            .values(kind="reasonformer_finetune", spec={"init": {"run_id": source}})
        )
    h = _bearer(_claim(api, reader))
    listed = api.client.get(f"/api/v1/runs/{source}/artifacts", headers=h)
    assert listed.status_code == 200
    got = api.client.get(f"/api/v1/runs/{source}/artifacts/outputs/w.txt", headers=h)
    assert got.content == b"weights"
    # reading it is all: no write, no other route of the source run
    r = api.client.put(f"/api/v1/runs/{source}/artifacts/outputs/x.txt?attempt=1", content=b"x", headers=h)
    assert r.status_code == 403
    assert api.client.get(f"/api/v1/runs/{source}", headers=h).status_code == 403
    assert api.client.get(f"/api/v1/runs/{source}/metric-keys", headers=h).status_code == 403
