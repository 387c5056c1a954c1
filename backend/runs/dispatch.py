"""The transactional outbox and the reaper, as background loops of the API process.

A run is committed ``queued`` with ``dispatched = false`` before anything is sent. The dispatcher sends
every such run to Celery by task name (``runs.execute``), then marks it dispatched; while the broker is
down the send fails, the run stays undispatched and is retried on the next tick. A crash between send
and mark sends twice at worst, and the claim refuses the second delivery.

Order: each tick sends the highest ``resources.priority`` first and, within a priority, the oldest run
first (the smallest id: a requeued attempt keeps its run's place), each with its message priority
(``common.broker.PRIORITIES``); the broker then hands them out in that order, first in first out within a
priority (docs/architecture.md, "Queue order").

The reaper returns runs whose heartbeat went stale to ``queued`` with attempt+1 (or fails them past
``max_attempts``); the dispatcher then sends the new attempt. The lost attempt's message, never
acknowledged by its dead worker, is then removed from the broker (``discard_unacked``): the claim would
refuse it anyway, but Redis would hand it out again after the visibility timeout, a week later.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from celery import Celery
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from backend.db import session_scope, utcnow
from backend.models import Run
from backend.runs import repository as runs_repo
from backend.runs import service as runs_service
from backend.runs.broker import celery_config, discard_unacked, task_id
from backend.settings import Settings
from common.broker import DEFAULT_PRIORITY, PRIORITIES, TASK_EXECUTE, message_priority

log = logging.getLogger("reasonlab.dispatch")


def run_priority(spec: Any) -> str:
    """A run's ``resources.priority`` from its stored spec (runs stored before the field: normal)."""
    resources = spec.get("resources") if isinstance(spec, dict) else None
    level = resources.get("priority") if isinstance(resources, dict) else None
    return level if isinstance(level, str) and level in PRIORITIES else DEFAULT_PRIORITY


def make_celery(settings: Settings) -> Celery:
    app = Celery("reasonlab-dispatch")
    app.conf.update(celery_config(settings))
    return app


class Dispatcher:
    def __init__(
        self, settings: Settings, factory: sessionmaker[Session], celery: Celery | None = None
    ) -> None:
        self.settings = settings
        self.factory = factory
        self.celery = celery or make_celery(settings)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._revokes: list[str] = []
        self._lock = threading.Lock()
        self.broker_ok = True

    # --- outbox ---
    def dispatch_once(self) -> int:
        """Send every queued, undispatched run, the highest priority first, then the oldest; returns how
        many were sent."""
        sent = 0
        superseded: dict[int, int] = {}  # run -> the attempt just sent, when it follows an earlier one
        with session_scope(self.factory) as session:
            resend_before = utcnow() - timedelta(seconds=self.settings.redispatch_after)
            pending = [
                (message_priority(run_priority(r.spec)), r.id, r.attempt, r.queue)
                for r in runs_repo.undispatched(session, resend_before)  # the oldest runs, by id
            ]
        pending.sort(key=lambda p: (p[0], p[1]))  # lower message priority goes first (common.broker)
        for priority, run_id, attempt, queue in pending:
            try:
                self._send(run_id, attempt, queue, priority)
            except Exception as exc:  # broker down: leave it undispatched, retry next tick
                if self.broker_ok:
                    log.warning("broker unavailable, run %s stays queued: %s", run_id, exc)
                self.broker_ok = False
                break
            self.broker_ok = True
            with session_scope(self.factory) as session:
                session.execute(
                    update(Run)
                    .where(Run.id == run_id, Run.attempt == attempt, Run.status == "queued")
                    .values(dispatched=True, dispatched_at=utcnow())
                )
            sent += 1
            if attempt > 1:
                superseded[run_id] = attempt
        if superseded:  # the runs' earlier attempts are stale: their messages may go
            self.discard_messages(lambda run_id, attempt: attempt < superseded.get(run_id, 0))
        self._flush_revokes()
        return sent

    def discard_messages(self, stale: Callable[[int, int], bool]) -> list[str]:
        """Remove the unacknowledged broker messages of stale attempts (a worker killed with -9 never
        acknowledges its message). Best effort: what stays is refused at claim when Redis hands it out
        again after the visibility timeout."""
        try:
            removed = discard_unacked(self.celery, stale)
        except Exception as exc:
            log.info("stale messages not removed from the broker: %s", exc)
            return []
        if removed:
            log.info("removed the unacknowledged messages of stale attempts: %s", ", ".join(removed))
        return removed

    def _send(
        self, run_id: int, attempt: int, queue: str, priority: int = PRIORITIES[DEFAULT_PRIORITY]
    ) -> None:
        # retry=False: never block the loop on a dead broker; the outbox retries instead.
        self.celery.send_task(
            TASK_EXECUTE,
            args=[run_id, attempt],
            queue=queue,
            task_id=task_id(run_id, attempt),
            priority=priority,
            retry=False,
        )

    def revoke(self, run_id: int, attempt: int) -> None:
        """Revoke a queued run's task (best effort: a late delivery is refused at claim anyway)."""
        with self._lock:
            self._revokes.append(task_id(run_id, attempt))
        self._wake.set()

    def _flush_revokes(self) -> None:
        with self._lock:
            pending, self._revokes = self._revokes, []
        for tid in pending:
            try:
                self.celery.control.revoke(tid)
            except Exception as exc:  # pragma: no cover - broker down; the claim refuses it later
                log.info("revoke of %s not sent: %s", tid, exc)

    # --- reaper ---
    def reap_once(self) -> list[tuple[int, str]]:
        with session_scope(self.factory) as session:
            outcomes = runs_service.reap(
                session, self.settings.heartbeat_timeout, self.settings.mlflow_run_timeout
            )
            # a requeued run's lost attempt goes when its next attempt is sent (dispatch_once); the lost
            # attempt of a run the reaper ended (failed, cancelled) goes now
            ended = {
                run_id: run.attempt
                for run_id, outcome in outcomes
                if outcome != "requeued" and (run := session.get(Run, run_id)) is not None
            }
        for run_id, outcome in outcomes:
            log.warning("reaper: run %s %s", run_id, outcome)
        if ended:
            self.discard_messages(lambda run_id, attempt: attempt <= ended.get(run_id, 0))
        if any(o == "requeued" for _, o in outcomes):
            self._wake.set()
        return outcomes

    # --- loops ---
    def wake(self) -> None:
        self._wake.set()

    def _dispatch_loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.dispatch_once()
            except Exception:
                log.exception("dispatch tick failed")
            self._wake.wait(self.settings.dispatch_interval)
            self._wake.clear()

    def _reap_loop(self) -> None:
        # Grace period: after an API restart, workers need one heartbeat interval to reach us again; a run
        # must not be reaped just because the API itself was down.
        if self._stop.wait(self.settings.heartbeat_timeout):
            return
        while not self._stop.wait(self.settings.reaper_interval):
            try:
                self.reap_once()
            except Exception:
                log.exception("reaper tick failed")

    def start(self) -> None:
        for target in (self._dispatch_loop, self._reap_loop):
            t = threading.Thread(target=target, name=f"reasonlab-{target.__name__.strip('_')}", daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        for t in self._threads:
            t.join(timeout=5)

    def __enter__(self) -> Dispatcher:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
