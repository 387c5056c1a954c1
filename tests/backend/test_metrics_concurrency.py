"""Concurrent metric writers to one run: every post succeeds and every point is stored.

Several posters into one run (a worker's background flush beside a retry after a client timeout, an SDK
user logging from several processes) used to deadlock on Postgres: each transaction took a share lock on
the run row (the metric -> runs foreign key) and then asked for an exclusive one to rewrite the run's
summary; Postgres broke the cycle by failing one of them (503). The TestClient serves each thread's
request concurrently (one event loop, sync endpoints in its thread pool, a pooled connection each).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import psycopg
import pytest
from sqlalchemy.exc import OperationalError

from backend.metrics import points as metric_points
from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)

THREADS = 8
BATCHES = 4  # per thread
KEYS = ("loss", "acc", "lr")
STEPS = 200  # per batch and key


def _batch(thread: int, batch: int) -> list[dict[str, Any]]:
    """Disjoint steps per (thread, batch); every batch writes every key (they share summary rows)."""
    first = (batch * THREADS + thread) * STEPS
    return [
        {"key": key, "step": step, "value": float(step) + i / 10}
        for step in range(first, first + STEPS)
        for i, key in enumerate(KEYS)
    ]


def _post_concurrently(api: Api, run_id: int) -> list[tuple[int, str]]:
    barrier = threading.Barrier(THREADS)
    answers: list[tuple[int, str]] = []
    lock = threading.Lock()

    def poster(thread: int) -> None:
        barrier.wait()
        for batch in range(BATCHES):
            r = api.client.post(
                f"/api/v1/runs/{run_id}/metrics", json={"points": _batch(thread, batch)}, headers=api.worker
            )
            with lock:
                answers.append((r.status_code, r.text[:300]))

    threads = [threading.Thread(target=poster, args=(t,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return answers


@pytest.mark.parametrize("database_url", ["postgres", "sqlite"], indirect=True)
def test_concurrent_posters_to_one_run_all_succeed(api: Api) -> None:
    run = api.submit({}).json()["runs"][0]
    answers = _post_concurrently(api, run["id"])
    failed = [a for a in answers if a[0] != 200]
    assert len(answers) == THREADS * BATCHES and failed == [], failed
    assert all(text == f'{{"accepted":{STEPS * len(KEYS)}}}' for _, text in answers)

    total = THREADS * BATCHES * STEPS
    got = api.client.get(
        f"/api/v1/runs/{run['id']}/metrics?keys={','.join(KEYS)}&max_points=10000", headers=api.h()
    ).json()["series"]
    for i, key in enumerate(KEYS):
        series = got[key]
        assert (series["total_points"], series["step_min"], series["step_max"]) == (total, 0, total - 1)
        assert [b["last"] for b in series["buckets"]] == [float(s) + i / 10 for s in range(total)]
    # the summary is each key's value at its largest step, whichever poster wrote it and whenever
    summary = api.client.get(f"/api/v1/runs/{run['id']}", headers=api.h()).json()["summary"]
    assert summary == {key: float(total - 1) + i / 10 for i, key in enumerate(KEYS)}


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_503_from_the_database_says_why_in_the_api_log(
    api: Api, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The client is told "try again"; the API log names the database's reason (here a deadlock)."""
    run = api.submit({}).json()["runs"][0]

    def deadlock(*_args: Any, **_kwargs: Any) -> None:
        orig = psycopg.errors.DeadlockDetected("deadlock detected\nDETAIL:  Process 1 waits for ShareLock")
        raise OperationalError("COPY metric", None, orig)

    monkeypatch.setattr(metric_points, "upsert_series", deadlock)
    with caplog.at_level(logging.WARNING, logger="reasonlab.api"):
        r = api.client.post(
            f"/api/v1/runs/{run['id']}/metrics",
            json={"points": [{"key": "x", "step": 1, "value": 1.0}]},
            headers=api.worker,
        )
    assert r.status_code == 503 and r.json()["code"] == "unavailable"
    logged = [m for m in caplog.messages if m.startswith("503 for ")]
    assert logged == [
        f"503 for POST /api/v1/runs/{run['id']}/metrics: DeadlockDetected [40P01]: deadlock detected "
        "DETAIL: Process 1 waits for ShareLock"
    ]
