"""NaN and infinities stored as values, not gaps (common/nonfinite.py): logged through the SDK or posted as
JSON's strings, read back by the metric route at every zoom (raw points, grouped points, roll-ups) with
min and max over the finite values only, each bucket's count of non-finite points and its last point's
kind, on SQLite (whose REAL turns a NaN into NULL) and on Postgres."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

import reasonlab_sdk as rl
from reasonlab_sdk.sync import sync_folder
from tests.backend.conftest import Api
from tests.backend.test_sdk_tracking import _client

pytestmark = pytest.mark.dialect_matrix  # the storage is the subject: SQLite and Postgres

LABEL = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _logged() -> dict[int, float]:
    """60 steps of a falling loss with NaN, +inf and -inf among them."""
    values = {s: 1.0 / (s + 1) for s in range(60)}
    values |= {7: math.nan, 15: math.inf, 29: -math.inf, 41: math.nan, 59: math.inf}
    return values


def _label(v: float) -> str | None:
    return None if math.isfinite(v) else LABEL[str(v)]


def _get(api: Api, run_id: int, key: str, max_points: int) -> dict[str, Any]:
    res = api.client.get(
        f"/api/v1/runs/{run_id}/metrics", params={"keys": key, "max_points": max_points}, headers=api.h()
    )
    assert res.status_code == 200, res.text
    series: dict[str, Any] = res.json()["series"][key]
    return series


def _expected(values: dict[int, float], start: int, end: int) -> dict[str, Any]:
    """A bucket over steps start..end computed from the logged values directly."""
    inside = [values[s] for s in range(start, end + 1) if s in values]
    finite = [v for v in inside if math.isfinite(v)]
    last = values[end]
    return {
        "min": min(finite) if finite else None,
        "max": max(finite) if finite else None,
        "last": last if math.isfinite(last) else None,
        "last_nonfinite": _label(last),
        "count": len(inside),
        "nonfinite": len(inside) - len(finite),
    }


def _check_zooms(api: Api, run_id: int, key: str, values: dict[int, float]) -> None:
    # 10,000: a point a bucket; 12: 5 steps a bucket over the points; 6: 10 a bucket, from the roll-ups
    for max_points in (10_000, 12, 6):
        series = _get(api, run_id, key, max_points)
        assert series["total_points"] == len(values)
        for b in series["buckets"]:
            got = {k: b[k] for k in ("min", "max", "last", "last_nonfinite", "count", "nonfinite")}
            assert got == _expected(values, b["step_start"], b["step_end"]), (max_points, b)
        assert sum(b["nonfinite"] for b in series["buckets"]) == 5


def test_the_sdk_logs_nan_and_infinities_that_the_api_reads_back(
    api: Api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REASONLAB_DIR", str(tmp_path / "runs"))
    values = _logged()
    with rl.init(experiment="nonfinite", client=_client(api), system_metrics_interval=0) as run:
        for step, v in values.items():
            run.log({"loss": v}, step=step)
    _check_zooms(api, run.id, "loss", values)


def test_an_offline_log_keeps_them_and_reasonlab_sync_stores_them(
    api: Api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REASONLAB_DIR", str(tmp_path / "runs"))
    values = _logged()
    run = rl.init(mode="offline", id="odd", experiment="nonfinite", system_metrics_interval=0)
    for step, v in values.items():
        run.log({"loss": v}, step=step)
    run.finish()
    synced = sync_folder(_client(api), run.folder)
    assert synced.points == len(values)
    _check_zooms(api, synced.run_id, "loss", values)


def test_posted_strings_are_values_null_a_gap_and_an_overwrite_changes_the_kind(api: Api) -> None:
    run = api.client.post(
        "/api/v1/projects/1/runs/external", json={"experiment": "nonfinite"}, headers=api.h()
    ).json()
    run_id, token = run["id"], run["run_token"]
    values = _logged()
    points = [{"key": "x", "step": s, "value": _label(v) or v} for s, v in values.items()]
    res = api.client.post(
        f"/api/v1/runs/{run_id}/metrics",
        json={"points": points},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert res.status_code == 200, res.text
    _check_zooms(api, run_id, "x", values)
    # a resent batch overwrites (the merge path, roll-ups recomputed): NaN -> 2.0, 0.5 -> -inf, a gap
    again = [
        {"key": "x", "step": 7, "value": 2.0},
        {"key": "x", "step": 1, "value": "-Infinity"},
        {"key": "x", "step": 2, "value": None},
    ]
    res = api.client.post(
        f"/api/v1/runs/{run_id}/metrics", json={"points": again}, headers={"Authorization": f"Bearer {token}"}
    )
    assert res.status_code == 200, res.text
    series = _get(api, run_id, "x", 10_000)
    by_step = {b["step_start"]: b for b in series["buckets"]}
    assert (by_step[7]["last"], by_step[7]["last_nonfinite"], by_step[7]["nonfinite"]) == (2.0, None, 0)
    assert (by_step[1]["last"], by_step[1]["last_nonfinite"], by_step[1]["nonfinite"]) == (
        None,
        "-Infinity",
        1,
    )
    assert (by_step[2]["last"], by_step[2]["last_nonfinite"], by_step[2]["nonfinite"]) == (None, None, 0)
    values |= {7: 2.0, 1: -math.inf}
    coarse = _get(api, run_id, "x", 6)["buckets"]  # the roll-ups, recomputed
    first = coarse[0]  # steps 0..9: 1.0, -inf, a gap, 0.25 ... 2.0 ... 0.1
    finite = [v for s, v in values.items() if s <= 9 and s != 2 and math.isfinite(v)]
    assert (first["min"], first["max"], first["nonfinite"], first["count"]) == (min(finite), 2.0, 1, 10)
    assert sum(b["nonfinite"] for b in coarse) == 5  # NaN at 7 became 2.0, step 1 became -inf


def test_a_non_finite_latest_value_is_its_label_in_the_run_summary_and_the_experiment_table(api: Api) -> None:
    """The runs list, the run and the experiment's table show a series whose latest point is NaN or an
    infinity as that label, not as a missing metric; a finite latest stays a number, a gap stays null."""
    made = {}
    for name, last in (("nan", "NaN"), ("inf", "-Infinity"), ("fin", 0.5)):
        run = api.client.post(
            "/api/v1/projects/1/runs/external",
            json={"experiment": "nf-summary", "name": name},
            headers=api.h(),
        ).json()
        points = [{"key": "loss", "step": 1, "value": 1.0}, {"key": "loss", "step": 2, "value": last}]
        res = api.client.post(
            f"/api/v1/runs/{run['id']}/metrics",
            json={"points": points},
            headers={"Authorization": f"Bearer {run['run_token']}"},
        )
        assert res.status_code == 200, res.text
        made[name] = run
    expected = {"nan": "NaN", "inf": "-Infinity", "fin": 0.5}
    for name, run in made.items():
        got = api.client.get(f"/api/v1/runs/{run['id']}", headers=api.h()).json()
        assert got["summary"] == {"loss": expected[name]}
    listed = api.client.get("/api/v1/runs", params={"q": 'experiment = "nf-summary"'}, headers=api.h()).json()
    assert {r["name"]: r["summary"]["loss"] for r in listed["items"]} == expected
    experiment_id = made["nan"]["experiment_id"]
    table = api.client.get(f"/api/v1/experiments/{experiment_id}/runs-table", headers=api.h())
    assert table.status_code == 200, table.text
    body = table.json()
    assert dict(zip(body["name"], body["summary"]["loss"], strict=True)) == expected
