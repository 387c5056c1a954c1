"""Run numbers as users read them start at 1 (the activity feed and the sweep's messages used to say
#0 for an experiment's first run, the run page and the runs table #1). The API's ``index`` and the
``loc`` of a 422 stay 0-based: they are data, not text."""

from __future__ import annotations

from typing import Any

import pytest

from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)


def _feed(api: Api, run: dict[str, Any]) -> list[str]:
    rows = api.client.get(f"/api/v1/projects/{run['project_id']}/activity", headers=api.h()).json()
    return [a["message"] for a in rows if a.get("run_id") == run["id"]]


def test_the_feed_numbers_an_experiments_first_run_1(api: Api) -> None:
    runs = api.submit({}, {"grid": {"train.lr": [0.1, 0.01]}}).json()["runs"]
    assert [r["index"] for r in runs] == [0, 1]
    for run, status in zip(runs, ("succeeded", "failed"), strict=True):
        url = f"/api/v1/runs/{run['id']}"
        assert (
            api.client.post(
                f"{url}/claim", json={"attempt": 1, "worker": "w1"}, headers=api.worker
            ).status_code
            == 200
        )
        r = api.client.post(f"{url}/finish", json={"attempt": 1, "status": status}, headers=api.worker)
        assert r.status_code == 200, r.text
    first, second = (_feed(api, r) for r in runs)
    assert f"run {runs[0]['id']} (#1) succeeded at attempt 1" in first, first
    assert f"run {runs[1]['id']} (#2) failed at attempt 1" in second, second
    assert not any("(#0)" in m for m in first + second)


def test_a_sweep_error_names_its_combination_as_the_preview_numbers_it(api: Api) -> None:
    """The first combination is run #1 of the preview: its 422 says 'combination 1' (its loc keeps 0)."""
    r = api.client.post(
        "/api/v1/experiments/preview",
        json={"name": "x", "kind": "diagnostic", "spec": {}, "sweep": {"grid": {"train.lr": [-1, 0.1]}}},
        headers=api.h(),
    )
    assert r.status_code == 422, r.text
    (error,) = r.json()["errors"]
    assert error["loc"] == ["body", "sweep", 0, "train", "lr"]
    assert error["msg"].startswith("combination 1 {'train.lr': -1}: "), error["msg"]
