"""A metric sort's page walks metric_latest's index a chunk of candidates at a time
(backend/runs/repository.py ``page_by_metric``): with chunks of 1 and 2 candidates, a filtered walk through
ties, runs the filter drops and runs without a value gives the same rows, in the same order, as sorting
them here, at every page size and in both directions."""

from __future__ import annotations

from typing import Any

import pytest

from backend.runs import repository
from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix


def test_a_filtered_metric_sort_walks_the_index_in_chunks(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(repository, "METRIC_CHUNKS", (1, 2))
    runs = api.submit({}, sweep={"seeds": list(range(10))}).json()["runs"]
    ids = [r["id"] for r in runs]
    seeds = {r["id"]: r["spec"]["seed"] for r in runs}
    values = (0.5, 0.5, 0.25, None, 0.5, 0.75, 0.25, 0.5, None, 0.75)
    acc: dict[int, float | None] = dict(zip(ids, values, strict=True))
    for run_id, v in acc.items():
        if v is None and seeds[run_id] == 8:
            continue  # no series at all (seed 3's is a NaN point)
        body = {"points": [{"key": "acc", "step": 1, "value": v if v is not None else "NaN"}]}
        res = api.client.post(f"/api/v1/runs/{run_id}/metrics", json=body, headers=api.h())
        assert res.status_code == 200, res.text
    kept = {1, 2, 3, 4, 7, 8, 9}  # the filter drops seeds 0, 5, 6: a 0.5, a 0.75 and a 0.25
    q = "params.seed in (" + ", ".join(str(s) for s in sorted(kept)) + ")"
    valued = [i for i in ids if seeds[i] in kept and acc[i] is not None]
    missing = [i for i in ids if seeds[i] in kept and acc[i] is None]

    def value(i: int) -> float:
        v = acc[i]
        assert v is not None
        return v

    want = {
        "asc": sorted(valued, key=lambda i: (value(i), i)) + missing,
        "desc": sorted(valued, key=lambda i: (-value(i), i)) + missing,
    }
    for direction in ("asc", "desc"):
        for limit in (1, 2, 3, 4, 100):
            out: list[int] = []
            params: dict[str, Any] = {"q": q, "sort": "max(metrics.acc)", "order": direction, "limit": limit}
            while True:
                res = api.client.get("/api/v1/runs", params=params, headers=api.h())
                assert res.status_code == 200, res.text
                out += [r["id"] for r in res.json()["items"]]
                if not res.json()["next_cursor"]:
                    break
                params["cursor"] = res.json()["next_cursor"]
            assert out == want[direction], (direction, limit)
