"""``GET /runs/metrics?ids=&key=&max_points=``: one key's series of many runs in one request (a compare
page's seed groups), each run's item the per-run endpoint's answer for it."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix  # metric reads over raw points and roll-ups: SQLite and Postgres

URL = "/api/v1/runs/metrics"


def _post(api: Api, run_id: int, points: list[dict[str, Any]]) -> None:
    r = api.client.post(f"/api/v1/runs/{run_id}/metrics", json={"points": points}, headers=api.worker)
    assert r.status_code == 200, r.text


def _per_run(api: Api, run_id: int, key: str, max_points: int, token: str | None = None) -> Any:
    r = api.client.get(
        f"/api/v1/runs/{run_id}/metrics", params={"keys": key, "max_points": max_points}, headers=api.h(token)
    )
    assert r.status_code == 200, r.text
    return r.json()


def _batch(api: Api, ids: list[int] | str, key: str = "loss", token: str | None = None, **params: Any) -> Any:
    text = ids if isinstance(ids, str) else ",".join(map(str, ids))
    return api.client.get(URL, params={"ids": text, "key": key, **params}, headers=api.h(token))


def _errors(r: Any) -> list[list[str]]:
    assert r.status_code == 422, r.text
    return [e["loc"] for e in r.json()["errors"]]


def test_each_item_is_the_per_run_answer(api: Api) -> None:
    runs = [r["id"] for r in api.submit({}, sweep={"grid": {"seed": [1, 2, 3, 4]}}).json()["runs"]]
    rng = random.Random(3)
    # raw points (a short series), the roll-ups (25,000 points), a
    # series with gaps (null values and missing steps), and a run with no point of the key
    _post(api, runs[0], [{"key": "loss", "step": s, "value": rng.random()} for s in range(37)])
    for start in range(0, 25_000, 10_000):
        pts = [
            {"key": "loss", "step": s, "value": rng.random()}
            for s in range(start, min(start + 10_000, 25_000))
        ]
        _post(api, runs[1], pts)
    _post(
        api,
        runs[2],
        [{"key": "loss", "step": s * 3, "value": None if s % 7 == 0 else rng.random()} for s in range(400)],
    )
    _post(api, runs[3], [{"key": "acc", "step": 1, "value": 0.5}])
    for max_points in (100, 1000):
        batch = _batch(api, runs, max_points=max_points)
        assert batch.status_code == 200, batch.text
        assert batch.json() == [_per_run(api, r, "loss", max_points) for r in runs]
    # the roll-ups were read (25,000 points in at most 100 buckets on the 100-step roll-up's grid: 300
    # steps each) and the empty run answered as the per-run read does
    items = _batch(api, runs, max_points=100).json()
    long = items[1]["series"]["loss"]
    assert long["total_points"] == 25_000 and len(long["buckets"]) == 84
    assert (long["buckets"][0]["step_end"], long["buckets"][0]["count"]) == (299, 300)
    assert items[3] == {
        "run_id": runs[3],
        "series": {"loss": {"total_points": 0, "step_min": None, "step_max": None, "buckets": []}},
    }
    # in the order of ids, a repeated id answered once
    again = _batch(api, f"{runs[2]}, {runs[0]},{runs[2]}").json()
    assert [i["run_id"] for i in again] == [runs[2], runs[0]]
    assert again[0] == _per_run(api, runs[2], "loss", 1000)


def test_at_most_200_ids(api: Api) -> None:
    runs = [r["id"] for r in api.submit({}, sweep={"grid": {"seed": list(range(200))}}).json()["runs"]]
    assert len(runs) == 200
    _post(api, runs[-1], [{"key": "loss", "step": s, "value": float(s)} for s in range(5)])
    r = _batch(api, runs, max_points=10)
    assert r.status_code == 200, r.text
    items = r.json()
    assert [i["run_id"] for i in items] == runs
    assert items[-1] == _per_run(api, runs[-1], "loss", 10)
    assert sum(i["series"]["loss"]["total_points"] for i in items) == 5
    over = _batch(api, [*runs, runs[0]])  # 201 names, even with one repeated
    assert _errors(over) == [["query", "ids"]]
    assert "at most 200" in over.json()["detail"]


def test_bad_ids_and_keys_are_422s_naming_the_field(api: Api) -> None:
    run = api.submit({}).json()["runs"][0]["id"]
    _post(api, run, [{"key": "loss", "step": 0, "value": 1.0}])
    for ids in ("", "abc", f"{run},x", f"{run},", "0", "-1", "1.5", "2147483648", "١"):
        assert _errors(_batch(api, ids)) == [["query", "ids"]], ids
    for key in ("", "_private", "k" * 251):
        assert _errors(_batch(api, [run], key=key)) == [["query", "key"]], key
    assert _errors(api.client.get(URL, params={"ids": str(run)}, headers=api.h())) == [["query", "key"]]
    assert _errors(api.client.get(URL, params={"key": "loss"}, headers=api.h())) == [["query", "ids"]]
    assert _errors(_batch(api, [run], max_points=0)) == [["query", "max_points"]]
    assert _errors(_batch(api, [run], max_points=10_001)) == [["query", "max_points"]]
    # a key the runs never logged is no error: empty series, as the per-run read answers
    assert _batch(api, [run], key="never").json() == [_per_run(api, run, "never", 1000)]


def test_a_run_the_caller_cannot_see_is_a_404_for_the_whole_request(api: Api) -> None:
    ozzie = api.user("ozzie", project="elsewhere")
    mine = api.submit({}).json()["runs"][0]["id"]
    theirs = api.submit({}, project="elsewhere").json()["runs"][0]["id"]
    for run_id in (mine, theirs):
        _post(api, run_id, [{"key": "loss", "step": 0, "value": 1.0}])
    # the admin sees both
    assert [i["run_id"] for i in _batch(api, [mine, theirs]).json()] == [mine, theirs]
    # ozzie sees only the run of his project: the other is answered as the per-run read answers it
    per_run = api.client.get(f"/api/v1/runs/{mine}/metrics?keys=loss", headers=api.h(ozzie))
    assert per_run.status_code == 404
    for ids in ([theirs, mine], [mine], [mine, theirs]):
        r = _batch(api, ids, token=ozzie)
        assert r.status_code == 404, r.text
        assert r.json()["detail"] == per_run.json()["detail"] == f"run {mine} not found"
    assert _batch(api, [theirs], token=ozzie).json() == [_per_run(api, theirs, "loss", 1000, ozzie)]
    # a run that does not exist: the same answer, so ids of other projects cannot be probed
    missing = _batch(api, [theirs, 999_999], token=ozzie)
    assert missing.status_code == 404 and missing.json()["detail"] == "run 999999 not found"
    # a viewer of the default project reads the batch
    vic = api.user("vic", role="viewer")
    assert [i["run_id"] for i in _batch(api, [mine], token=vic).json()] == [mine]
