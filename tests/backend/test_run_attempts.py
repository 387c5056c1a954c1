"""Every attempt of a run leaves a trace (issue 22, item 5): its row in GET /runs/{id}/attempts, system
lines in the run's log, rows in the activity feed; ``held`` only while a worker's heartbeat is fresh; a run
time without the downtime between attempts; no old attempt's progress after a requeue. On SQLite and
Postgres (the ``api`` fixture)."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import update

from backend.db import get_engine, session_factory, session_scope, utcnow
from backend.models import Run, RunAttempt
from backend.runs import events, service
from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)


def _run(api: Api) -> dict[str, Any]:
    run: dict[str, Any] = api.submit({}).json()["runs"][0]
    return run


def _claim(api: Api, run_id: int, attempt: int, worker: str = "w1") -> None:
    r = api.client.post(
        f"/api/v1/runs/{run_id}/claim", json={"attempt": attempt, "worker": worker}, headers=api.worker
    )
    assert r.status_code == 200, r.text


def _get(api: Api, run_id: int) -> dict[str, Any]:
    got: dict[str, Any] = api.client.get(f"/api/v1/runs/{run_id}", headers=api.h()).json()
    return got


def _attempts(api: Api, run_id: int) -> list[dict[str, Any]]:
    r = api.client.get(f"/api/v1/runs/{run_id}/attempts", headers=api.h())
    assert r.status_code == 200, r.text
    rows: list[dict[str, Any]] = r.json()
    return rows


def _log(api: Api, run_id: int) -> list[str]:
    page = api.client.get(f"/api/v1/runs/{run_id}/logs", headers=api.h()).json()
    return [i["line"] for i in page["items"]]


def _feed(api: Api, run: dict[str, Any]) -> list[tuple[str, str]]:
    rows = api.client.get(f"/api/v1/projects/{run['project_id']}/activity", headers=api.h()).json()
    return [(a["type"], a["message"]) for a in rows if a.get("run_id") == run["id"]]


def _reap(api: Api, timeout: float = 0.1) -> list[tuple[int, str]]:
    with session_scope(session_factory(get_engine(api.settings.database_url))) as s:
        return service.reap(s, timeout_seconds=timeout)


def _age_heartbeat(api: Api, run_id: int, seconds: float) -> None:
    """The worker went silent ``seconds`` ago (its last heartbeat moved back, as its claim)."""
    with session_scope(session_factory(get_engine(api.settings.database_url))) as s:
        then = utcnow() - timedelta(seconds=seconds)
        s.execute(update(Run).where(Run.id == run_id).values(heartbeat_at=then))
        s.execute(
            update(RunAttempt)
            .where(RunAttempt.run_id == run_id)
            .values(started_at=then - timedelta(seconds=10))
        )


def test_release_at_shutdown_is_an_attempt_with_its_log_line_and_feed_row(api: Api) -> None:
    run = _run(api)
    url = f"/api/v1/runs/{run['id']}"
    _claim(api, run["id"], 1, "gpu-host-1")
    api.client.post(
        f"{url}/heartbeat",
        json={"attempt": 1, "progress": {"done": 40, "total": 100, "message": "epoch 2"}},
        headers=api.worker,
    )
    r = api.client.post(f"{url}/release", json={"attempt": 1}, headers=api.worker).json()
    assert (r["status"], r["attempt"], r["held"]) == ("queued", 2, False)
    # the old attempt's progress is gone; the message says why the run waits
    assert (r["progress"]["done"], r["progress"]["total"]) == (0, 0)
    assert "released by gpu-host-1 at shutdown" in r["progress"]["message"]
    rows = _attempts(api, run["id"])
    assert [(a["attempt"], a["worker"], a["outcome"]) for a in rows] == [(1, "gpu-host-1", "released")]
    assert rows[0]["ended_at"] is not None and rows[0]["duration_seconds"] >= 0
    log = _log(api, run["id"])
    assert "[reasonlab] attempt 1 of 3 claimed by worker gpu-host-1" in log
    assert any(
        "attempt 1 released by worker gpu-host-1 at shutdown: requeued as attempt 2" in line for line in log
    ), log
    assert [t for t, _ in _feed(api, run)].count("released") == 1
    # the next attempt: its own row, running
    _claim(api, run["id"], 2, "gpu-host-2")
    assert [(a["attempt"], a["outcome"]) for a in _attempts(api, run["id"])] == [
        (1, "released"),
        (2, "running"),
    ]


def test_reaper_requeues_a_lost_attempt_with_a_trace_and_no_old_progress(api: Api) -> None:
    run = _run(api)
    url = f"/api/v1/runs/{run['id']}"
    _claim(api, run["id"], 1, "w-lost")
    api.client.post(
        f"{url}/heartbeat",
        json={"attempt": 1, "progress": {"done": 7, "total": 10, "message": "step 7"}},
        headers=api.worker,
    )
    _age_heartbeat(api, run["id"], 30)
    assert _reap(api, timeout=5) == [(run["id"], "requeued")]
    got = _get(api, run["id"])
    assert (got["status"], got["attempt"]) == ("queued", 2)
    assert (got["progress"]["done"], got["progress"]["total"], got["progress"]["eta_at"]) == (0, 0, None)
    assert "worker w-lost lost" in got["progress"]["message"]
    (row,) = _attempts(api, run["id"])
    assert (row["attempt"], row["worker"], row["outcome"]) == (1, "w-lost", "lost")
    # a lost attempt ends at its last heartbeat: the 30 s nobody worked on it are not its duration
    assert 9 <= row["duration_seconds"] <= 11
    assert any(
        line.startswith("[reasonlab] attempt 1 lost: worker w-lost lost (no heartbeat since")
        and "requeued as attempt 2 of 3" in line
        for line in _log(api, run["id"])
    )
    (feed,) = [m for t, m in _feed(api, run) if t == "requeued"]
    assert "attempt 1 lost" in feed and "requeued as attempt 2 of 3" in feed


def test_reaper_fails_a_run_lost_at_its_last_attempt_and_says_so(api: Api) -> None:
    run = _run(api)
    for attempt in (1, 2, 3):
        _claim(api, run["id"], attempt, f"w{attempt}")
        time.sleep(0.3)
        _reap(api)
    got = _get(api, run["id"])
    assert got["status"] == "failed"
    assert [(a["attempt"], a["worker"], a["outcome"]) for a in _attempts(api, run["id"])] == [
        (1, "w1", "lost"),
        (2, "w2", "lost"),
        (3, "w3", "lost"),
    ]
    assert any("attempt 3 lost" in line and "failed (the last of 3)" in line for line in _log(api, run["id"]))
    types = [t for t, _ in _feed(api, run)]
    assert types.count("requeued") == 2 and types.count("failed") == 1
    (failed,) = [m for t, m in _feed(api, run) if t == "failed"]
    assert "worker w3 lost at the last attempt (3 of 3" in failed


def test_a_resumed_attempt_is_noted_once_in_log_feed_and_history(api: Api) -> None:
    run = _run(api)
    url = f"/api/v1/runs/{run['id']}"
    _claim(api, run["id"], 1)
    api.client.post(f"{url}/release", json={"attempt": 1}, headers=api.worker)
    _claim(api, run["id"], 2, "w2")
    for _ in range(2):  # a retried post notes it once
        r = api.client.post(f"{url}/resumed", json={"attempt": 2, "step": 40}, headers=api.worker)
        assert r.status_code == 204, r.text
    # only the attempt that owns the run may say so; a bad step names its field
    assert (
        api.client.post(f"{url}/resumed", json={"attempt": 1, "step": 4}, headers=api.worker).status_code
        == 409
    )
    bad = api.client.post(f"{url}/resumed", json={"attempt": 2, "step": -1}, headers=api.worker)
    assert bad.status_code == 422 and "step" in bad.text
    rows = _attempts(api, run["id"])
    assert [(a["attempt"], a["outcome"], a["resumed_step"]) for a in rows] == [
        (1, "released", None),
        (2, "running", 40),
    ]
    assert _log(api, run["id"]).count("[reasonlab] attempt 2 resumed from the checkpoint at step 40") == 1
    resumed = [m for t, m in _feed(api, run) if t == "resumed"]
    assert len(resumed) == 1 and "step 40" in resumed[0] and "attempt 2" in resumed[0]


def test_held_only_while_the_heartbeat_is_fresh(api: Api) -> None:
    """The API's heartbeat timeout here is 2 s (tests/backend/conftest.py): the run stays running (the
    reaper has not come by) but no worker holds it once its heartbeat is older than that."""
    run = _run(api)
    assert _get(api, run["id"])["held"] is False  # queued
    _claim(api, run["id"], 1)
    assert _get(api, run["id"])["held"] is True
    _age_heartbeat(api, run["id"], 3)
    got = _get(api, run["id"])
    assert (got["status"], got["held"]) == ("running", False)
    # in the experiment's runs and the runs list too
    exp = api.client.get(f"/api/v1/experiments/{run['experiment_id']}", headers=api.h()).json()
    assert [r["held"] for r in exp["runs"]] == [False]
    api.client.post(f"/api/v1/runs/{run['id']}/heartbeat", json={"attempt": 1}, headers=api.worker)
    assert _get(api, run["id"])["held"] is True
    listed = api.client.get(f"/api/v1/runs?experiment_id={run['experiment_id']}", headers=api.h()).json()
    assert [r["held"] for r in listed["items"]] == [True]


def test_run_time_is_the_sum_of_attempts_without_the_downtime(api: Api) -> None:
    run = _run(api)
    url = f"/api/v1/runs/{run['id']}"
    assert _get(api, run["id"])["run_seconds"] is None
    _claim(api, run["id"], 1)
    _age_heartbeat(api, run["id"], 100)  # worked 10 s, then silent for 100 s
    _reap(api, timeout=5)
    _claim(api, run["id"], 2)
    factory = session_factory(get_engine(api.settings.database_url))
    with session_scope(factory) as s:  # the second attempt: claimed 4 s ago, heartbeat now
        s.execute(
            update(RunAttempt)
            .where(RunAttempt.run_id == run["id"], RunAttempt.attempt == 2)
            .values(started_at=utcnow() - timedelta(seconds=4))
        )
    api.client.post(f"{url}/heartbeat", json={"attempt": 2}, headers=api.worker)
    got = _get(api, run["id"])
    # 10 s + 4 s; the span since the first claim is over 110 s
    assert 13.5 <= got["run_seconds"] <= 15.5, got["run_seconds"]
    api.client.post(f"{url}/finish", json={"attempt": 2, "status": "succeeded"}, headers=api.worker)
    done = _get(api, run["id"])
    assert 13.5 <= done["run_seconds"] <= 16, done["run_seconds"]
    rows = _attempts(api, run["id"])
    assert [a["outcome"] for a in rows] == ["lost", "succeeded"]
    assert abs(sum(a["duration_seconds"] for a in rows) - done["run_seconds"]) < 1e-6
    assert "[reasonlab] attempt 2 succeeded on worker w1" in _log(api, run["id"])


def test_cancels_are_in_the_log(api: Api) -> None:
    queued = _run(api)
    api.client.post(f"/api/v1/runs/{queued['id']}/cancel", headers=api.h())
    assert "[reasonlab] cancelled while queued (attempt 1 never ran)" in _log(api, queued["id"])
    running = _run(api)
    url = f"/api/v1/runs/{running['id']}"
    _claim(api, running["id"], 1)
    api.client.post(f"{url}/cancel", headers=api.h())
    api.client.post(f"{url}/finish", json={"attempt": 1, "status": "cancelled"}, headers=api.worker)
    log = _log(api, running["id"])
    assert "[reasonlab] cancel requested while attempt 1 runs" in log
    assert "[reasonlab] attempt 1 cancelled on worker w1" in log
    assert [a["outcome"] for a in _attempts(api, running["id"])] == ["cancelled"]


def test_a_retry_opens_a_new_attempt_with_no_old_progress(api: Api) -> None:
    run = _run(api)
    url = f"/api/v1/runs/{run['id']}"
    _claim(api, run["id"], 1)
    fin = {"attempt": 1, "status": "failed", "progress": {"done": 3, "total": 9, "message": "x"}}
    api.client.post(f"{url}/finish", json=fin, headers=api.worker)
    r = api.client.post(f"{url}/retry", headers=api.h()).json()
    assert (r["status"], r["attempt"], r["progress"]["done"], r["progress"]["total"]) == ("queued", 2, 0, 0)
    assert "[reasonlab] retry requested: queued as attempt 2" in _log(api, run["id"])
    _claim(api, run["id"], 2, "w2")
    assert [(a["attempt"], a["outcome"]) for a in _attempts(api, run["id"])] == [
        (1, "failed"),
        (2, "running"),
    ]


def test_the_event_stream_says_when_the_holder_goes_stale(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stream sends the run again (a status event) when ``held`` turns false, though status, attempt
    and worker did not change: the page stops saying "live" before the reaper requeues the run."""
    monkeypatch.setattr(events, "POLL_SECONDS", 0.01)
    run = _run(api)
    _claim(api, run["id"], 1)
    app = api.client.app  # type: ignore[attr-defined]

    async def disconnected() -> bool:
        return False

    request = SimpleNamespace(app=app, is_disconnected=disconnected)

    async def statuses() -> list[bool]:
        held: list[bool] = []
        stream = events.stream(request, run["id"])  # type: ignore[arg-type]
        async for chunk in stream:
            if chunk.startswith("event: status"):
                held.append(json.loads(chunk.split("data: ", 1)[1])["held"])
                if len(held) == 1:  # the worker goes silent past the timeout (2 s here)
                    await asyncio.to_thread(_age_heartbeat, api, run["id"], 3)
                else:
                    break
        await stream.aclose()  # type: ignore[attr-defined]  # an async generator (events.stream)
        return held

    assert asyncio.run(asyncio.wait_for(statuses(), 30)) == [True, False]
