"""Every attempt of a run leaves a trace: its row in GET /runs/{id}/attempts, system
lines in the run's log, rows in the activity feed; ``held`` only while a worker's heartbeat is fresh; a run
time without the downtime between attempts; no old attempt's progress after a requeue. On SQLite and
Postgres (the ``api`` fixture)."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import time
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import text, update

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


def _release(api: Api, run_id: int, attempt: int) -> dict[str, Any]:
    r = api.client.post(f"/api/v1/runs/{run_id}/release", json={"attempt": attempt}, headers=api.worker)
    assert r.status_code == 200, r.text
    got: dict[str, Any] = r.json()
    return got


def _found(api: Api, q: str) -> list[int]:
    r = api.client.get("/api/v1/runs", params={"q": q, "project": "default"}, headers=api.h())
    assert r.status_code == 200, r.text
    return [i["id"] for i in r.json()["items"]]


def test_released_attempts_are_counted_apart_and_leave_the_allowance(api: Api) -> None:
    """Three Ctrl-Cs of `reasonlab up` release the run three times. It reads "attempt
    1/3, resumed 3x" (attempt 4, released 3, max_attempts 3), not "attempt 4/6"; a worker lost after that
    uses one of the three counted attempts, and the third loss fails the run."""
    run = _run(api)
    rid = run["id"]
    for attempt in (1, 2, 3):
        _claim(api, rid, attempt, f"up-{attempt}")
        r = _release(api, rid, attempt)
        assert (r["status"], r["attempt"], r["released"], r["max_attempts"]) == (
            "queued",
            attempt + 1,
            attempt,
            3,
        )
    _claim(api, rid, 4, "up-4")
    got = _get(api, rid)
    assert (got["attempt"], got["released"], got["max_attempts"]) == (4, 3, 3)
    log = _log(api, rid)
    assert "[reasonlab] attempt 4 (counted: 1 of 3; 3 released before it) claimed by worker up-4" in log, log
    assert any(
        "attempt 3 released by worker up-3 at shutdown: requeued as attempt 4 (counted: 1 of 3; 3 released"
        in line
        for line in log
    ), log
    # the query language counts attempts as the allowance does
    assert rid in _found(api, "attempt = 1 and released = 3")
    assert rid not in _found(api, "attempt > 1") and rid in _found(api, "released >= 1")
    # real losses count: requeued while fewer than 3 counted attempts were used, failed at the third
    for attempt, counted in ((4, 1), (5, 2)):
        _age_heartbeat(api, rid, 30)
        assert _reap(api, timeout=5) == [(rid, "requeued")], (attempt, counted)
        got = _get(api, rid)
        assert (got["status"], got["attempt"], got["released"], got["max_attempts"]) == (
            "queued",
            attempt + 1,
            3,
            3,
        )
        assert rid in _found(api, f"attempt = {counted + 1}")
        _claim(api, rid, attempt + 1, f"lost-{attempt + 1}")
    _age_heartbeat(api, rid, 30)
    assert _reap(api, timeout=5) == [(rid, "failed")]
    got = _get(api, rid)
    assert (
        got["status"] == "failed" and "at attempt 6 (counted: 3 of 3; 3 released before it)" in got["error"]
    )
    assert any("attempt 6 lost" in line and "failed (the last of 3)" in line for line in _log(api, rid))
    assert [a["outcome"] for a in _attempts(api, rid)] == ["released"] * 3 + ["lost"] * 3
    # a retry is a counted attempt: the allowance grows to it, the released ones still apart
    r = api.client.post(f"/api/v1/runs/{rid}/retry", headers=api.h()).json()
    assert (r["status"], r["attempt"], r["released"], r["max_attempts"]) == ("queued", 7, 3, 4)


def test_a_real_failure_counts_and_a_release_after_it_does_not(api: Api) -> None:
    run = _run(api)
    rid, url = run["id"], f"/api/v1/runs/{run['id']}"
    _claim(api, rid, 1)
    api.client.post(f"{url}/finish", json={"attempt": 1, "status": "failed"}, headers=api.worker)
    r = api.client.post(f"{url}/retry", headers=api.h()).json()
    assert (r["attempt"], r["released"], r["max_attempts"]) == (2, 0, 3)
    _claim(api, rid, 2)
    r = _release(api, rid, 2)
    assert (r["attempt"], r["released"], r["max_attempts"]) == (3, 1, 3)
    assert rid in _found(api, "attempt = 2 and released = 1")
    assert rid not in _found(api, "attempt = 3")
    # the runs table and its export count the same way: attempt 3 with one released, counted 2
    exp_id = run["experiment_id"]
    table = api.client.get(f"/api/v1/experiments/{exp_id}/runs-table", headers=api.h()).json()
    assert (table["attempt"], table["released"]) == ([3], [1])
    export = api.client.get(f"/api/v1/experiments/{exp_id}/runs/export", headers=api.h())
    header, row = list(csv.reader(io.StringIO(export.text)))
    assert (row[header.index("attempt")], row[header.index("released")]) == ("2", "1")


def test_migration_counts_earlier_releases_apart(database_url: str, home: Path) -> None:
    """Upgrading to 0027: a run released before it (each release raised max_attempts by one and left a
    ``released`` attempt row) gets ``released`` from those rows and its allowance back; a run without
    released rows is left as it was. Downgrading raises the allowance again."""
    from alembic import command

    from backend.bootstrap import alembic_config

    config = alembic_config(database_url)
    command.upgrade(config, "head")
    command.downgrade(config, "0026")
    engine = get_engine(database_url)
    # (run id, status, attempt, max_attempts, outcomes of its attempt rows)
    runs = [
        (1, "running", 4, 6, ["released", "released", "released", "running"]),
        (2, "queued", 3, 3, ["lost", "lost"]),
        (3, "failed", 4, 4, ["released", "lost", "lost", "lost"]),
        (4, "queued", 2, 4, []),  # released before attempt rows were kept: nothing to go by
    ]
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO projects (id, name, description, created_at) VALUES (1, 'p', '', CURRENT_TIMESTAMP)"
            )
        )
        conn.execute(
            text(
                "INSERT INTO experiments (id, project_id, name, description, kind, spec, created_at) "
                "VALUES (1, 1, 'e', '', 'diagnostic', '{}', CURRENT_TIMESTAMP)"
            )
        )
        for rid, status, attempt, max_attempts, outcomes in runs:
            conn.execute(
                text(
                    'INSERT INTO runs (id, experiment_id, project_id, kind, "index", spec, params, queue, status, '
                    "attempt, max_attempts, progress_done, progress_total, progress_message, cancel_requested, "
                    "dispatched, created_at, updated_at) VALUES (:id, 1, 1, 'diagnostic', :id, '{}', '{}', "
                    "'cpu', :status, :attempt, :max, 0, 0, '', false, true, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
                ).bindparams(id=rid, status=status, attempt=attempt, max=max_attempts)
            )
            for n, outcome in enumerate(outcomes, start=1):
                conn.execute(
                    text(
                        "INSERT INTO run_attempts (run_id, attempt, worker, started_at, outcome) "
                        "VALUES (:id, :n, 'w', CURRENT_TIMESTAMP, :outcome)"
                    ).bindparams(id=rid, n=n, outcome=outcome)
                )
    command.upgrade(config, "head")
    with engine.begin() as conn:
        got = conn.execute(text("SELECT id, attempt, released, max_attempts FROM runs ORDER BY id")).all()
    assert [tuple(r) for r in got] == [(1, 4, 3, 3), (2, 3, 0, 3), (3, 4, 1, 3), (4, 2, 0, 4)]
    command.downgrade(config, "0026")
    with engine.begin() as conn:
        got = conn.execute(text("SELECT id, max_attempts FROM runs ORDER BY id")).all()
    assert [tuple(r) for r in got] == [(1, 6), (2, 3), (3, 4), (4, 4)]
    command.upgrade(config, "head")


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
    with session_scope(factory) as s:  # the second attempt: claimed 20 s ago, heartbeat now
        s.execute(
            update(RunAttempt)
            .where(RunAttempt.run_id == run["id"], RunAttempt.attempt == 2)
            .values(started_at=utcnow() - timedelta(seconds=20))
        )
    api.client.post(f"{url}/heartbeat", json={"attempt": 2}, headers=api.worker)
    got = _get(api, run["id"])
    # 10 s + 20 s, the span since the first claim over 130 s. The heartbeat's and the finish's times are the
    # API's clock, read after this test's: the bounds leave a few seconds for a loaded machine or a step of
    # the VM's clock between the reads
    assert 27 <= got["run_seconds"] <= 60, got["run_seconds"]
    api.client.post(f"{url}/finish", json={"attempt": 2, "status": "succeeded"}, headers=api.worker)
    done = _get(api, run["id"])
    assert 27 <= done["run_seconds"] <= 60, done["run_seconds"]
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
    assert "[reasonlab] retry requested: queued as attempt 2 of 3" in _log(api, run["id"])
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
