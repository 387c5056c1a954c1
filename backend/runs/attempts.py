"""A run's attempts: who held each, from when to when, how it ended; and what that makes visible.

Every lifecycle change of backend/runs/service.py (claim, finish, release, reap, cancel, resumed) writes
here in the same transaction as the run's own UPDATE: the attempt's row (``run_attempts``), a system line
in the run's log (the Logs tab, ``reasonlab runs logs``) that names the attempt, and, for what a member
should hear of without opening the run, a row in the project's activity feed (lost and
requeued attempts left no trace).

Attempts are numbered and counted apart: every claim is the next ``runs.attempt`` (its token, task id
and row name it), but an attempt released at a worker's shutdown does not count against
``max_attempts``: ``runs.released`` counts those, and the run has used ``attempt - released`` of its
allowance (``counted``), what the run page, ``reasonlab runs`` and the query language's ``attempt`` show.

Run time excludes downtime: an attempt lasts from its claim to its end, and a lost attempt ends at its
last heartbeat (when its worker was last known to work on it), not when the reaper noticed. A run is
*held* while it is running and its heartbeat is fresher than the reaper's timeout: the dashboard's
"live" means that, not an open event stream.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.models import Run, RunAttempt, RunLog, run_seconds
from common.runs import FINISHED_STATUSES

# what an attempt's row says while it runs, and how it may end
OUTCOMES: tuple[str, ...] = ("running", *FINISHED_STATUSES, "released", "lost")
# the prefix of the system's own lines in a run's log (the worker's lines carry their logger's format)
LOG_PREFIX = "[reasonlab]"


def stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S UTC")


def counted(run: Run) -> int:
    """The attempts of the run that count against ``max_attempts``, the current one included: every
    attempt but the released ones."""
    return run.attempt - run.released


def numbered(attempt: int, released: int, max_attempts: int) -> str:
    """An attempt as the log names it, after the word "attempt": ``2 of 3``; after released attempts (not
    counted) its number and its count apart: ``4 (counted: 1 of 3; 3 released before it)``."""
    if released == 0:
        return f"{attempt} of {max_attempts}"
    return f"{attempt} (counted: {attempt - released} of {max_attempts}; {released} released before it)"


def log(session: Session, run: Run, line: str, now: datetime) -> None:
    """A system line in the run's log, beside its worker's lines."""
    session.add(RunLog(run_id=run.id, time=now, line=f"{LOG_PREFIX} {line}"))


def opened(session: Session, run: Run, worker: str, now: datetime, how: str = "claimed by worker") -> None:
    """The claim of ``run.attempt`` by ``worker`` (``run`` as after the claim); ``how`` words the log line
    (an external run's attempt is opened by its script, not claimed)."""
    row = session.get(RunAttempt, (run.id, run.attempt))
    if row is None:
        session.add(RunAttempt(run_id=run.id, attempt=run.attempt, worker=worker, started_at=now))
    else:  # an attempt number is claimed once; a row left by anything else is overwritten
        row.worker, row.started_at, row.ended_at, row.outcome = worker, now, None, "running"
    log(session, run, f"attempt {numbered(run.attempt, run.released, run.max_attempts)} {how} {worker}", now)


def closed(session: Session, run_id: int, attempt: int, outcome: str, ended_at: datetime) -> None:
    """The end of an attempt; nothing if it has no row (it started before migration 0013)."""
    assert outcome in OUTCOMES and outcome != "running", outcome
    row = session.get(RunAttempt, (run_id, attempt))
    if row is not None and row.ended_at is None:
        row.outcome, row.ended_at = outcome, max(ended_at, row.started_at)


def resumed(session: Session, run_id: int, attempt: int, step: int) -> bool:
    """Note that ``attempt`` resumed from the checkpoint at ``step``; False if it was already noted."""
    row = session.get(RunAttempt, (run_id, attempt))
    if row is None or row.resumed_step is not None:
        return False
    row.resumed_step = step
    return True


def of_run(session: Session, run_id: int) -> list[RunAttempt]:
    stmt = select(RunAttempt).where(RunAttempt.run_id == run_id).order_by(RunAttempt.attempt)
    return list(session.scalars(stmt))


def duration(row: RunAttempt, run: Run) -> float:
    """Seconds the attempt was worked on: to its end, or (running) to the run's last heartbeat."""
    return row.seconds(run)


def held(run: Run, now: datetime, heartbeat_timeout: float) -> bool:
    """A worker holds the run now: it runs and its heartbeat is fresher than the reaper's timeout."""
    return (
        run.status == "running"
        and run.heartbeat_at is not None
        and run.heartbeat_at >= now - timedelta(seconds=heartbeat_timeout)
    )


@dataclass(frozen=True)
class Timing:
    held: bool
    # seconds workers spent on the run over all its attempts (the running one to its last heartbeat);
    # None: it never started
    run_seconds: float | None


def timings(
    session: Session, runs: Iterable[Run], now: datetime, heartbeat_timeout: float
) -> dict[int, Timing]:
    runs = list(runs)
    by_run: dict[int, list[RunAttempt]] = {r.id: [] for r in runs}
    ids = list(by_run)
    for start in range(0, len(ids), 1000):  # an IN list of bounded length
        stmt = select(RunAttempt).where(RunAttempt.run_id.in_(ids[start : start + 1000]))
        for row in session.scalars(stmt):
            by_run[row.run_id].append(row)
    return {r.id: Timing(held(r, now, heartbeat_timeout), run_seconds(r, by_run[r.id])) for r in runs}
