"""POST /runs/{id}/params: the parameters a run logs itself (``ctx.log_params``), stored flattened in
``runs.logged_params`` and merged (the last value of a key kept), shown in ``RunPublic.logged_params``.
From the run's own token (checked for its attempt) or a project member; bounded, 422 naming the field. On
SQLite and Postgres."""

from __future__ import annotations

from typing import Any

import pytest

from backend.db import get_engine, session_factory, session_scope
from backend.models import Run
from backend.runs.schemas import MAX_LOGGED_PARAMS, MAX_PARAM_KEY, MAX_PARAM_VALUE
from tests.backend.conftest import WORKER_TOKEN, Api

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _claim(api: Api, run_id: int, attempt: int | None = 1) -> dict[str, str]:
    r = api.client.post(
        f"/api/v1/runs/{run_id}/claim",
        json={"attempt": attempt, "worker": "w"},
        headers=_bearer(WORKER_TOKEN),
    )
    assert r.status_code == 200, r.text
    return _bearer(r.json()["run_token"])


def _two_runs(api: Api) -> tuple[int, int]:
    runs = api.submit({}, sweep={"grid": {"seed": [1, 2]}}).json()["runs"]
    return runs[0]["id"], runs[1]["id"]


def _post(api: Api, run_id: int, params: dict[str, Any], headers: dict[str, str], **body: Any) -> Any:
    return api.client.post(f"/api/v1/runs/{run_id}/params", json={"params": params, **body}, headers=headers)


def _logged(api: Api, run_id: int) -> dict[str, Any]:
    logged: dict[str, Any] = api.client.get(f"/api/v1/runs/{run_id}", headers=api.h()).json()["logged_params"]
    return logged


def _rev(api: Api, run_id: int) -> int:
    with session_scope(session_factory(get_engine(api.settings.database_url))) as session:
        run = session.get(Run, run_id)
        assert run is not None
        return run.logged_params_rev


def test_the_run_logs_params_merged_flat_the_last_value_kept(api: Api) -> None:
    own, _ = _two_runs(api)
    assert _logged(api, own) == {}
    h = _claim(api, own)
    spec = api.client.get(f"/api/v1/runs/{own}", headers=h).json()["spec"]
    r = _post(api, own, {**spec, "derived": {"parameters": 1234, "device_map": {"0": "cpu"}}}, h, attempt=1)
    assert r.status_code == 204, r.text
    logged = _logged(api, own)
    assert logged["derived.parameters"] == 1234 and logged["derived.device_map.0"] == "cpu"
    assert logged["seed"] == spec["seed"] and "train.lr" in logged and "train" not in logged
    assert _rev(api, own) == 1
    # the same again (a retried post, a resumed attempt): nothing written
    assert _post(api, own, {"derived": {"parameters": 1234}}, h, attempt=1).status_code == 204
    assert _rev(api, own) == 1
    # a key logged again keeps its last value; new keys join; lists, booleans and null are values
    r = _post(api, own, {"derived": {"parameters": 99, "layers": [1, 2]}, "flag": True, "none": None}, h)
    assert r.status_code == 204, r.text
    logged = _logged(api, own)
    assert logged["derived.parameters"] == 99 and logged["derived.layers"] == [1, 2]
    assert logged["flag"] is True and logged["none"] is None and logged["derived.device_map.0"] == "cpu"
    assert _rev(api, own) == 2
    # 1 and true are not the same value
    assert _post(api, own, {"flag": 1}, h).status_code == 204
    assert _logged(api, own)["flag"] == 1 and _rev(api, own) == 3
    # the runs list shows them too
    listed = api.client.get("/api/v1/runs", headers=api.h()).json()["items"]
    assert next(r for r in listed if r["id"] == own)["logged_params"]["derived.parameters"] == 99


def test_another_runs_token_is_refused_and_a_stale_attempt_conflicts(api: Api) -> None:
    own, other = _two_runs(api)
    h = _claim(api, own)
    assert _post(api, other, {"a": 1}, h).status_code == 403
    assert _post(api, own, {"a": 1}, h, attempt=2).status_code == 409  # not this run's attempt
    assert _post(api, own, {"a": 1}, h, attempt=1).status_code == 204
    # the worker gives the run back: attempt 1's token and writes die with it
    assert api.client.post(f"/api/v1/runs/{own}/release", json={"attempt": 1}, headers=h).status_code == 200
    assert _post(api, own, {"a": 2}, h, attempt=1).status_code == 409
    second = _claim(api, own, None)
    assert _post(api, own, {"a": 2}, second, attempt=1).status_code == 409
    assert _post(api, own, {"a": 3}, second, attempt=2).status_code == 204
    assert _logged(api, own) == {"a": 3}
    # a finished run: its attempt writes no more; a member may still add (a notebook)
    fin = {"attempt": 2, "status": "succeeded"}
    assert api.client.post(f"/api/v1/runs/{own}/finish", json=fin, headers=second).status_code == 200
    assert _post(api, own, {"a": 4}, api.h(), attempt=2).status_code == 409
    viewer = _bearer(api.user("vic", role="viewer"))
    assert _post(api, own, {"a": 4}, viewer).status_code == 403
    assert _post(api, own, {"eval": {"n": 5}}, _bearer(api.user("meg"))).status_code == 204
    assert _logged(api, own) == {"a": 3, "eval.n": 5}


def test_params_are_bounded_422_naming_the_field(api: Api) -> None:
    own, _ = _two_runs(api)
    h = _claim(api, own)

    def refused(params: dict[str, Any], loc: list[Any]) -> None:
        r = _post(api, own, params, h, attempt=1)
        assert r.status_code == 422, r.text
        assert [e["loc"] for e in r.json()["errors"]] == [loc], r.json()

    too_many = {f"k{i}": i for i in range(MAX_LOGGED_PARAMS + 1)}
    refused(too_many, ["body", "params"])
    refused({"nested": too_many}, ["body", "params"])  # counted after flattening
    refused({"ok": 1, "x" * (MAX_PARAM_KEY + 1): 1}, ["body", "params", "x" * (MAX_PARAM_KEY + 1)])
    refused({"a": {"b": "v" * (MAX_PARAM_VALUE + 1)}}, ["body", "params", "a.b"])
    refused({"a": list(range(5000))}, ["body", "params", "a"])  # a list counts as its JSON text
    refused({"": 1}, ["body", "params", ""])
    assert _logged(api, own) == {}  # a refused post stores nothing of itself
    r = api.client.post(
        f"/api/v1/runs/{own}/params",
        content=b'{"params": {"ok": 1, "loss": NaN}, "attempt": 1}',
        headers={**h, "Content-Type": "application/json"},
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "params", "loss"], r.text
    # the limit holds for the run as a whole: posts that together pass it
    half = MAX_LOGGED_PARAMS // 2 + 1
    assert _post(api, own, {f"a{i}": i for i in range(half)}, h, attempt=1).status_code == 204
    refused({f"b{i}": i for i in range(half)}, ["body", "params"])
    assert len(_logged(api, own)) == half
    # at the limits exactly: stored
    exact = {"k" * MAX_PARAM_KEY: "v" * MAX_PARAM_VALUE}
    assert _post(api, own, exact, h, attempt=1).status_code == 204
    assert _logged(api, own)["k" * MAX_PARAM_KEY] == "v" * MAX_PARAM_VALUE
