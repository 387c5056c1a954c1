"""Cancel while queued, then retry, on Postgres + Redis with a real Celery worker.

Task ids are per attempt (``run-<id>-attempt-<n>``, backend/runs/broker.py) and the cancel of a queued run
revokes its attempt's task id: every Celery worker then keeps that id in its revoked set (3 hours) and
drops, unrun and acknowledged, any message that carries it. So a message is lost if an attempt once
revoked is ever queued again: the run would stay ``queued``, marked dispatched, until the dispatcher's
re-send after ``redispatch_after`` (6 hours).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import redis

from backend.db import get_engine, session_factory
from backend.errors import Conflict
from backend.models import Run
from backend.runs import service
from common.broker import PRIORITIES, REDIS_PRIORITY_SEP
from tests.backend.test_dispatch import RedisProcess, _free_port
from tests.integration.platform import Platform, wait_for

pytestmark = pytest.mark.slow

BUSY = {"train": {"steps": 200, "checkpoint_every": 1000, "step_delay": 0.05}}
SMALL = {"train": {"steps": 5}}


@pytest.fixture
def pg_platform(tmp_path: Path, postgres_url: str) -> Iterator[Platform]:
    """Postgres and a redis-server of the test's own: the revokes and messages these tests count are
    theirs alone (the shared Redis's numbered databases may be another test's at the same time)."""
    broker = RedisProcess(_free_port(), tmp_path)
    broker.start()
    platform = Platform(tmp_path / "home", postgres_url, f"redis://127.0.0.1:{broker.port}/0")
    try:
        yield platform
    finally:
        platform.stop()
        broker.stop()


def _queued(platform: Platform) -> list[str]:
    broker = redis.Redis.from_url(platform.settings.broker_url)
    # kombu's Redis list of the cpu queue's normal-priority messages (common.broker), newest first
    raws = cast(list[bytes], broker.lrange(f"cpu{REDIS_PRIORITY_SEP}{PRIORITIES['normal']}", 0, -1))
    return [json.loads(raw)["headers"]["id"] for raw in raws]


def _busy_worker(platform: Platform) -> int:
    """The API and one worker, kept busy by a long run (it takes no queued message but hears every
    revoke); the long run's id."""
    platform.start_api()
    platform.start_worker()
    busy = int(platform.submit(BUSY, name="busy")["runs"][0]["id"])
    wait_for(lambda: platform.client.get_run(busy)["status"] == "running", 120, "the busy run to start")
    return busy


def _queued_run(platform: Platform) -> int:
    rid = int(platform.submit(SMALL, name="queued")["runs"][0]["id"])
    wait_for(lambda: f"run-{rid}-attempt-1" in _queued(platform), 30, "the run's message in the queue")
    return rid


def _finishes(platform: Platform, busy: int, rid: int) -> dict[str, Any]:
    """Free the worker; the run must then be run to its end from the messages in the broker."""
    platform.client.cancel_run(busy)
    wait_for(lambda: _queued(platform) == [], 60, "the worker to take every queued message")
    try:
        (final,) = platform.wait_finished([rid], timeout=120)
    except AssertionError:
        run = platform.client.get_run(rid)
        raise AssertionError(
            f"run {rid} left {run['status']} at attempt {run['attempt']} (dispatched: the broker holds no "
            f"message for it)\n{platform.diagnostics()}"
        ) from None
    return final


def test_cancel_while_queued_then_retry_runs_the_retry(pg_platform: Platform) -> None:
    busy = _busy_worker(pg_platform)
    rid = _queued_run(pg_platform)
    assert pg_platform.client.cancel_run(rid)["status"] == "cancelled"  # revokes run-<id>-attempt-1
    retried = pg_platform.client.retry_run(rid)
    assert (retried["status"], retried["attempt"]) == ("queued", 2)
    # the retry's message queues behind the cancelled attempt's, still in the broker
    wait_for(
        lambda: _queued(pg_platform) == [f"run-{rid}-attempt-2", f"run-{rid}-attempt-1"],
        30,
        "the retry's message",
    )
    final = _finishes(pg_platform, busy, rid)
    assert (final["status"], final["attempt"]) == ("succeeded", 2), pg_platform.diagnostics()
    assert f"Discarding revoked task: runs.execute[run-{rid}-attempt-1]" in pg_platform.diagnostics()
    # cancel-then-retry of a running run: the busy run stopped at the cancel; its retry runs to the end
    assert pg_platform.client.get_run(busy)["status"] == "cancelled"
    assert pg_platform.client.retry_run(busy)["attempt"] == 2
    (again,) = pg_platform.wait_finished([busy])
    assert again["status"] == "succeeded" and again["attempt"] >= 2, pg_platform.diagnostics()


def test_a_retry_that_read_the_run_before_a_retry_and_cancel_never_requeues_a_revoked_attempt(
    pg_platform: Platform,
) -> None:
    """Two retries of one cancelled run race (a double click, the CLI and the dashboard): retry A reads
    the run (cancelled, attempt 1); meanwhile retry B requeues it as attempt 2 and a cancel revokes
    attempt 2's task; then A writes. A must not queue attempt 2 again: its message would carry the
    revoked task id and be dropped by the worker."""
    busy = _busy_worker(pg_platform)
    rid = _queued_run(pg_platform)
    pg_platform.client.cancel_run(rid)
    factory = session_factory(get_engine(pg_platform.settings.database_url))
    with factory() as session_a:
        run_a = session_a.get(Run, rid)  # retry A has read the run (what POST /runs/{id}/retry does first)
        assert run_a is not None and (run_a.status, run_a.attempt) == ("cancelled", 1)
        assert pg_platform.client.retry_run(rid)["attempt"] == 2  # retry B
        wait_for(lambda: f"run-{rid}-attempt-2" in _queued(pg_platform), 30, "retry B's message")
        assert pg_platform.client.cancel_run(rid)["status"] == "cancelled"  # revokes run-<id>-attempt-2
        try:
            retried = service.retry(session_a, run_a)  # retry A goes on
            session_a.commit()
        except Conflict:  # the run changed under A: refused, and the user retries again
            session_a.rollback()
            retried = None
    if retried is None:
        assert pg_platform.client.get_run(rid)["status"] == "cancelled"
        pg_platform.client.retry_run(rid)
    # whichever way retry A went, the run must now run (before the fix A queued attempt 2 again: lost)
    final = _finishes(pg_platform, busy, rid)
    assert (final["status"], final["attempt"]) == ("succeeded", 3)
