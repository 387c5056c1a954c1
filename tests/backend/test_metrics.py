from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)


def _post(api: Api, run_id: int, points: list[dict]) -> object:
    return api.client.post(f"/api/v1/runs/{run_id}/metrics", json={"points": points}, headers=api.worker)


def test_resent_points_overwrite_never_duplicate(api: Api) -> None:
    run = api.submit({}).json()["runs"][0]
    pts = [{"key": "loss", "step": s, "value": float(s)} for s in range(100)]
    assert _post(api, run["id"], pts).json() == {"accepted": 100}
    assert _post(api, run["id"], [{"key": "loss", "step": 50, "value": -1.0}, *pts[60:]]).status_code == 200
    m = api.client.get(f"/api/v1/runs/{run['id']}/metrics?keys=loss&max_points=1000", headers=api.h()).json()
    series = m["series"]["loss"]
    assert series["total_points"] == 100
    assert len(series["buckets"]) == 100 and all(b["count"] == 1 for b in series["buckets"])
    assert series["buckets"][50]["last"] == -1.0


def test_oversize_batch_is_413_and_stores_nothing(api: Api) -> None:
    run = api.submit({}).json()["runs"][0]
    pts = [{"key": "x", "step": s, "value": 0.0} for s in range(10_001)]
    r = _post(api, run["id"], pts)
    assert r.status_code == 413 and r.json()["code"] == "too_large"
    assert api.client.get(f"/api/v1/runs/{run['id']}/metric-keys", headers=api.h()).json() == []
    assert _post(api, run["id"], pts[:10_000]).status_code == 200


def test_downsampling_keeps_spikes_and_last_values(api: Api) -> None:
    run = api.submit({}).json()["runs"][0]
    rng = random.Random(0)
    values = [rng.random() for _ in range(10_000)]
    values[4321] = 100.0  # a spike
    _post(api, run["id"], [{"key": "loss", "step": s, "value": v} for s, v in enumerate(values)])
    out = api.client.get(f"/api/v1/runs/{run['id']}/metrics?keys=loss&max_points=100", headers=api.h()).json()
    buckets = out["series"]["loss"]["buckets"]
    assert len(buckets) == 100
    # independent computation: 100 equal step ranges of width 100
    for i, b in enumerate(buckets):
        chunk = values[i * 100 : (i + 1) * 100]
        assert (b["step_start"], b["step_end"], b["count"]) == (i * 100, i * 100 + 99, 100)
        assert b["min"] == min(chunk) and b["max"] == max(chunk) and b["last"] == chunk[-1]
    assert max(b["max"] for b in buckets) == 100.0
    zoom = api.client.get(
        f"/api/v1/runs/{run['id']}/metrics?keys=loss&max_points=100&step_min=4300&step_max=4399",
        headers=api.h(),
    ).json()["series"]["loss"]["buckets"]
    assert len(zoom) == 100 and zoom[21]["max"] == 100.0 and zoom[21]["step_start"] == 4321


def test_non_finite_values_are_accepted_and_read_as_null(api: Api) -> None:
    run = api.submit({}).json()["runs"][0]
    r = api.client.post(
        f"/api/v1/runs/{run['id']}/metrics",
        content=b'{"points": [{"key": "loss", "step": 1, "value": NaN}, {"key": "loss", "step": 2, "value": 1.5}]}',
        headers={**api.worker, "content-type": "application/json"},
    )
    assert r.status_code == 200, r.text
    b = api.client.get(f"/api/v1/runs/{run['id']}/metrics?keys=loss", headers=api.h()).json()["series"][
        "loss"
    ]["buckets"]
    assert b[1]["last"] == 1.5


def test_results_are_validated_against_their_schema(api: Api) -> None:
    run = api.submit({}).json()["runs"][0]
    url = f"/api/v1/runs/{run['id']}/results"
    ok = {
        "kind": "diagnostic",
        "payload": {"final_loss": 0.1, "initial_loss": 1.0, "steps": 10, "parameters": 33},
    }
    assert api.client.post(url, json=ok, headers=api.worker).status_code == 201
    bad = {"kind": "diagnostic", "payload": {"final_loss": "x"}}
    r = api.client.post(url, json=bad, headers=api.worker)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"][:2] == ["body", "payload"]
    assert api.client.post(url, json={"kind": "nope", "payload": {}}, headers=api.worker).status_code == 422
    listed = api.client.get(
        f"/api/v1/experiments/{run['experiment_id']}/results?kind=diagnostic", headers=api.h()
    ).json()
    assert len(listed) == 1 and listed[0]["payload"]["final_loss"] == 0.1


def test_review_comments_tags_stars_and_activity(api: Api) -> None:
    exp = api.submit({}, name="study").json()
    eid = exp["id"]
    assert (
        api.client.post(
            f"/api/v1/experiments/{eid}/comments", json={"body": "**nice**"}, headers=api.h()
        ).status_code
        == 201
    )
    assert (
        api.client.get(f"/api/v1/experiments/{eid}/comments", headers=api.h()).json()[0]["body"] == "**nice**"
    )
    r = api.client.put(f"/api/v1/experiments/{eid}/review", json={"state": "approved"}, headers=api.h())
    assert r.json()["reviewer"] == "admin"
    assert api.client.put(f"/api/v1/experiments/{eid}/tags/baseline", headers=api.h()).json() == ["baseline"]
    assert api.client.put(f"/api/v1/experiments/{eid}/star", headers=api.h()).status_code == 204
    e = api.client.get(f"/api/v1/experiments/{eid}", headers=api.h()).json()
    assert e["review_state"] == "approved" and e["tags"] == ["baseline"] and e["starred"] is True
    feed = api.client.get(f"/api/v1/projects/{e['project_id']}/activity", headers=api.h()).json()
    assert [a["type"] for a in feed][:3] == ["reviewed", "commented", "submitted"]


def test_null_values_are_gaps_and_underscore_keys_are_refused(api: Api) -> None:
    run = api.submit({}).json()["runs"][0]
    assert _post(api, run["id"], [{"key": "loss", "step": 1, "value": None}]).status_code == 200
    r = _post(api, run["id"], [{"key": "_steps", "step": 1, "value": 1.0}])
    assert r.status_code == 422 and r.json()["errors"][0]["loc"][-1] == "key"


def test_large_metric_answers_are_gzipped_on_the_wire(api: Api) -> None:
    run = api.submit({}).json()["runs"][0]
    _post(api, run["id"], [{"key": "loss", "step": s, "value": s / 7} for s in range(5000)])
    r = api.client.get(
        f"/api/v1/runs/{run['id']}/metrics?keys=loss", headers={**api.h(), "Accept-Encoding": "gzip"}
    )
    assert r.status_code == 200 and r.headers["content-encoding"] == "gzip"
    assert int(r.headers["content-length"]) < len(r.content) / 2  # the JSON compresses well
    assert len(r.json()["series"]["loss"]["buckets"]) == 1000


def test_a_stale_attempt_cannot_write_and_results_are_idempotent(api: Api) -> None:
    run = api.submit({}).json()["runs"][0]
    url = f"/api/v1/runs/{run['id']}"
    api.client.post(f"{url}/claim", json={"attempt": 1, "worker": "w"}, headers=api.worker)
    pts = {"points": [{"key": "loss", "step": 1, "value": 1.0}], "attempt": 1}
    assert api.client.post(f"{url}/metrics", json=pts, headers=api.worker).status_code == 200
    assert (
        api.client.post(f"{url}/metrics", json={**pts, "attempt": 2}, headers=api.worker).status_code == 409
    )
    record = {"final_loss": 0.1, "initial_loss": 1.0, "steps": 10, "parameters": 33}
    body = {"kind": "diagnostic", "payload": record, "key": "diagnostic:0", "attempt": 1}
    assert api.client.post(f"{url}/results", json=body, headers=api.worker).status_code == 201
    body["payload"] = {**record, "final_loss": 0.05}
    assert api.client.post(f"{url}/results", json=body, headers=api.worker).status_code == 201  # re-sent
    stored = api.client.get(f"{url}/results", headers=api.h()).json()
    assert len(stored) == 1 and stored[0]["payload"]["final_loss"] == 0.05
    api.client.post(f"{url}/finish", json={"attempt": 1, "status": "succeeded"}, headers=api.worker)
    assert api.client.post(f"{url}/metrics", json=pts, headers=api.worker).status_code == 409  # after finish
    logs = {"lines": ["late"], "attempt": 1}
    assert api.client.post(f"{url}/logs", json=logs, headers=api.worker).status_code == 409


def test_with_time_gives_each_bucket_its_last_points_time(api: Api) -> None:
    # charts over wall-clock or relative time need the points' times: each bucket carries its last one
    run = api.submit({}).json()["runs"][0]
    t0 = datetime(2023, 11, 14, 22, 13, tzinfo=UTC)  # step s was logged at t0 + s seconds
    pts = [
        {"key": "loss", "step": s, "value": float(s), "time": (t0 + timedelta(seconds=s)).isoformat()}
        for s in range(200)
    ]
    assert _post(api, run["id"], pts).status_code == 200
    url = f"/api/v1/runs/{run['id']}/metrics?keys=loss"
    plain = api.client.get(f"{url}&max_points=10", headers=api.h()).json()["series"]["loss"]["buckets"]
    assert all(b["time"] is None for b in plain)  # not asked: no extra probe per bucket
    for max_points in (10, 200):  # wide buckets (SQLite walks ranges) and one point per bucket (one query)
        got = api.client.get(f"{url}&max_points={max_points}&with_time=true", headers=api.h()).json()
        buckets = got["series"]["loss"]["buckets"]
        assert len(buckets) == max_points
        for b in buckets:
            when = datetime.fromisoformat(b["time"].replace("Z", "+00:00"))
            assert when == t0 + timedelta(seconds=b["step_end"]), b
