"""The run lifecycle: queued -> running -> succeeded | failed | cancelled (DESIGN.md, Contracts).

Workers claim, heartbeat and finish through these functions (via the API); the reaper returns runs
whose worker went silent to ``queued`` with attempt+1, or fails them past ``max_attempts``. A worker
shutting down releases its run: the next attempt, counted apart (``released``), never against
``max_attempts`` (``backend.runs.attempts.counted``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.activity import feed
from backend.auth.principal import Principal
from backend.db import utcnow
from backend.errors import Conflict, Forbidden, NotFound
from backend.mirror import repository as mirror
from backend.models import Run, RunLog
from backend.projects import service as projects
from backend.runs import attempts, eta, repository
from backend.runs.schemas import ClaimIn, FinishIn, HeartbeatIn, ResumedIn
from common.runs import EXTERNAL_KIND, FINISHED_STATUSES, MLFLOW_QUEUE

# what a requeue resets: the page must not show the old attempt's progress as the new one's
NO_PROGRESS: dict[str, object] = {"progress_done": 0, "progress_total": 0, **eta.NEW_ATTEMPT}


def get_visible(session: Session, principal: Principal, run_id: int, minimum: str = "viewer") -> Run:
    run = session.get(Run, run_id)
    if run is None:
        raise NotFound(f"run {run_id} not found")
    projects.require_role(session, principal, run.project_id, minimum, f"run {run_id}")
    return run


def get_visible_many(session: Session, principal: Principal, run_ids: Sequence[int]) -> list[Run]:
    """The runs of ``run_ids`` (in that order, each once) when the caller may see every one of them:
    one query for the runs and one role lookup per project. A run that does not exist or that the caller
    cannot see answers what ``get_visible`` answers for it (404 "run N not found", the first such id in
    the list's order), so a batch read cannot probe which ids exist in other projects."""
    wanted = list(dict.fromkeys(run_ids))
    found = {r.id: r for r in session.scalars(select(Run).where(Run.id.in_(wanted)))} if wanted else {}
    checked: set[int] = set()
    out: list[Run] = []
    for run_id in wanted:
        run = found.get(run_id)
        if run is None:
            raise NotFound(f"run {run_id} not found")
        if run.project_id not in checked:
            projects.require_role(session, principal, run.project_id, "viewer", f"run {run_id}")
            checked.add(run.project_id)
        out.append(run)
    return out


def get_for_worker(session: Session, principal: Principal, run_id: int, *, lifecycle: bool = False) -> Run:
    """Routes workers write through accept the worker token; metrics, results and logs also accept a
    member of the run's project (an SDK user logging from a notebook). The lifecycle (claim, heartbeat,
    finish) is the worker's alone (or a site admin's), so no member can fake a finished run."""
    run = session.get(Run, run_id)
    if run is None:
        raise NotFound(f"run {run_id} not found")
    if principal.is_worker or principal.run_id == run.id:
        return run
    projects.require_role(session, principal, run.project_id, "member", f"run {run_id}")
    if lifecycle and not principal.is_admin:
        raise Forbidden("only workers (the worker token) claim, heartbeat and finish runs")
    return run


def check_writer(run: Run, attempt: int | None) -> None:
    """A worker's write names its attempt: refused once that attempt no longer owns the run (it was
    reaped and handed on, or finished), so a stale attempt can never overwrite the new one's series."""
    if attempt is not None and (run.status != "running" or run.attempt != attempt):
        raise Conflict(
            f"attempt {attempt} no longer owns run {run.id} (it is {run.status}, attempt {run.attempt})"
        )


def _activity(session: Session, run: Run, type_: str, message: str, actor_id: int | None = None) -> None:
    """The run's row in its project's feed (backend/activity/feed.py), tied to the run and its experiment."""
    feed.record(
        session,
        run.project_id,
        type_,
        message,
        actor_id=actor_id,
        experiment_id=run.experiment_id,
        run_id=run.id,
    )


def rename(session: Session, principal: Principal, run: Run, name: str | None) -> Run:
    """Give the run a name (``None`` clears it), with a "renamed" row in the feed when it changed. The
    runs table's revision trigger (migration 0012) counts the change, so its cached encoding is rebuilt."""
    if name == run.name:
        return run
    old = run.name
    run.name = name
    what = f"run {run.id}"
    if name is None:
        message = f"{what} unnamed (was {old!r})"
    elif old is None:
        message = f"{what} named {name!r}"
    else:
        message = f"{what} renamed from {old!r} to {name!r}"
    _activity(session, run, "renamed", message, principal.user_id)
    mirror.renamed(session, run.id)  # its MLflow run takes the new name (backend/mirror/)
    session.flush()
    session.refresh(run)  # table_rev, bumped by the trigger
    return run


def claim(session: Session, run: Run, body: ClaimIn) -> Run:
    now = utcnow()
    attempt = run.attempt if body.attempt is None else body.attempt
    ok = repository.transition(
        session,
        run.id,
        [Run.status == "queued", Run.attempt == attempt],
        {
            "status": "running",
            "worker": body.worker,
            "heartbeat_at": now,
            "started_at": run.started_at or now,
            "cancel_requested": False,
            **eta.NEW_ATTEMPT,
        },
    )
    if not ok:
        session.refresh(run)
        if run.status == "running" and run.attempt == attempt and run.worker == body.worker:
            return run  # the same worker re-sent its claim (the first answer was lost)
        raise Conflict(
            f"run {run.id} attempt {attempt} cannot be claimed: it is {run.status} at attempt {run.attempt}"
        )
    session.refresh(run)
    attempts.opened(session, run, body.worker, now)
    return run


def heartbeat(session: Session, run: Run, body: HeartbeatIn) -> bool:
    now = utcnow()
    values: dict[str, object] = {"heartbeat_at": now}
    if body.progress is not None:
        progress = body.progress
        values |= eta.progress_values(run, progress.done, progress.total, progress.message, now)
    if not repository.transition(session, run.id, repository.owned(body.attempt), values):
        session.refresh(run)
        raise Conflict(
            f"attempt {body.attempt} no longer owns run {run.id} (it is {run.status}, attempt {run.attempt})"
        )
    session.refresh(run)
    return run.cancel_requested


def finish(session: Session, run: Run, body: FinishIn) -> Run:
    # body.mlflow_run_id (sent by older workers) is ignored: the API's MLflow mirror owns runs.mlflow_run_id
    now = utcnow()
    values: dict[str, object] = {"status": body.status, "finished_at": now, "error": body.error}
    if body.progress is not None:
        values |= {
            "progress_done": body.progress.done,
            "progress_total": body.progress.total,
            "progress_message": body.progress.message,
        }
    if not repository.transition(session, run.id, repository.owned(body.attempt), values):
        session.refresh(run)
        if run.attempt == body.attempt and run.status == body.status:
            return run  # a retried finish whose first answer was lost: idempotent
        raise Conflict(
            f"attempt {body.attempt} no longer owns run {run.id} (it is {run.status}, attempt {run.attempt})"
        )
    session.refresh(run)
    attempts.closed(session, run.id, body.attempt, body.status, now)
    attempts.log(session, run, f"attempt {body.attempt} {body.status} on worker {run.worker}", now)
    verb = {"succeeded": "finished", "failed": "failed", "cancelled": "cancelled"}[body.status]
    _activity(session, run, verb, f"run {run.id} (#{run.index + 1}) {body.status} at attempt {run.attempt}")
    return run


def release(session: Session, run: Run, attempt: int) -> Run:
    """A worker shutting down gives its run back after a checkpoint: queued again as attempt+1 with
    ``released`` + 1 and ``max_attempts`` unchanged (the released attempt is not counted), so a rolling
    restart of the workers never uses up a run's attempts, and a run released three times reads
    "attempt 1/3, resumed 3x", not "attempt 4/6"."""
    if run.kind == EXTERNAL_KIND:
        raise Conflict(f"run {run.id} is external: no worker can take it over (its script finishes it)")
    now = utcnow()
    worker = run.worker
    values: dict[str, object] = {
        "status": "queued",
        "attempt": attempt + 1,
        "released": Run.released + 1,  # the guard holds the attempt: no release counted twice
        "dispatched": False,
        "dispatched_at": None,
        "worker": None,
        **NO_PROGRESS,
        "progress_message": f"released by {worker} at shutdown: requeued",
    }
    # a cancel asked of a run that is then given back is still a cancel: it ends cancelled, not queued
    cancelled = {"status": "cancelled", "finished_at": now, "worker": None}
    if repository.transition(
        session, run.id, [*repository.owned(attempt), Run.cancel_requested.is_(True)], cancelled
    ):
        session.refresh(run)
        attempts.closed(session, run.id, attempt, "cancelled", now)
        attempts.log(session, run, f"attempt {attempt} cancelled (given back by worker {worker})", now)
        _activity(session, run, "cancelled", f"run {run.id} cancelled (given back by its worker)")
        return run
    if not repository.transition(
        session, run.id, [*repository.owned(attempt), Run.cancel_requested.is_(False)], values
    ):
        session.refresh(run)
        raise Conflict(
            f"attempt {attempt} no longer owns run {run.id} (it is {run.status}, attempt {run.attempt})"
        )
    session.refresh(run)
    attempts.closed(session, run.id, attempt, "released", now)
    attempts.log(
        session,
        run,
        f"attempt {attempt} released by worker {worker} at shutdown: requeued as attempt "
        f"{attempts.numbered(run.attempt, run.released, run.max_attempts)}",
        now,
    )
    _activity(
        session,
        run,
        "released",
        f"run {run.id} (#{run.index + 1}) released by worker {worker} at shutdown: "
        f"requeued as attempt {run.attempt}",
    )
    return run


def cancel(session: Session, principal: Principal, run: Run) -> tuple[Run, bool]:
    """Cancel a run; returns (run, revoke) where revoke says a queued task should be revoked."""
    # The run may move between queued and running while this runs (a claim; a reaper or a release that
    # requeues it): try both until one holds, so a cancel is never lost in between.
    for _ in range(5):
        if run.status in FINISHED_STATUSES:
            raise Conflict(f"run {run.id} is already {run.status}")
        if repository.transition(
            session, run.id, [Run.status == "queued"], {"status": "cancelled", "finished_at": utcnow()}
        ):
            session.refresh(run)
            attempts.log(session, run, f"cancelled while queued (attempt {run.attempt} never ran)", utcnow())
            _activity(session, run, "cancelled", f"run {run.id} cancelled while queued", principal.user_id)
            return run, True
        if repository.transition(session, run.id, [Run.status == "running"], {"cancel_requested": True}):
            session.refresh(run)
            attempts.log(session, run, f"cancel requested while attempt {run.attempt} runs", utcnow())
            return run, False
        session.refresh(run)
    raise Conflict(f"run {run.id} kept changing state: cancel it again")


def retry(session: Session, run: Run) -> Run:
    """Requeue a failed or cancelled run as its next attempt.

    The UPDATE holds only while the run is still ended *at the attempt read*, so an attempt is queued at
    most once: two retries racing (a double click, the CLI and the dashboard) requeue the run once, and a
    retry that read the run before another retry and a cancel is refused (409) instead of queueing the
    attempt it read + 1 again. Task ids are per attempt (``backend.runs.broker.task_id``) and the cancel of a
    queued run revokes its attempt's id, which every worker then drops unrun for hours: that attempt
    queued again would have no deliverable message."""
    if run.status not in ("failed", "cancelled"):
        raise Conflict(f"run {run.id} is {run.status}: only failed or cancelled runs can be retried")
    if run.kind == EXTERNAL_KIND:
        raise Conflict(f"run {run.id} is external: its script resumes it (resume='must' with its id)")
    attempt = run.attempt + 1
    requeued = repository.transition(
        session,
        run.id,
        [Run.status.in_(("failed", "cancelled")), Run.attempt == run.attempt],
        {
            "status": "queued",
            "attempt": attempt,
            # a retry is a counted attempt: the allowance grows to it if it was used up
            "max_attempts": max(run.max_attempts, attempt - run.released),
            "dispatched": False,
            "dispatched_at": None,
            "worker": None,
            "error": None,
            "cancel_requested": False,
            "finished_at": None,
            **NO_PROGRESS,
            "progress_message": "retry requested",
        },
    )
    session.refresh(run)
    if not requeued:
        raise Conflict(
            f"run {run.id} changed while it was retried (another retry came first): it is "
            f"{run.status} at attempt {run.attempt}"
        )
    queued = attempts.numbered(run.attempt, run.released, run.max_attempts)
    attempts.log(session, run, f"retry requested: queued as attempt {queued}", utcnow())
    return run


def reap(
    session: Session, timeout_seconds: float, mlflow_timeout_seconds: float | None = None
) -> list[tuple[int, str]]:
    """Runs whose heartbeat is older than the timeout: back to queued (attempt+1) or failed; an external
    run (its script's, never a worker's) is failed as crashed, never requeued. The lost attempt ends at
    its last heartbeat (the last sign of its worker): its run time has no downtime. A run MLflow's client
    drives (``MLFLOW_QUEUE``: its calls are its heartbeats) is crashed after ``mlflow_timeout_seconds``
    instead, when given."""
    now = utcnow()
    cutoff = now - timedelta(seconds=timeout_seconds)
    mlflow_cutoff = (
        None if mlflow_timeout_seconds is None else now - timedelta(seconds=mlflow_timeout_seconds)
    )
    outcomes: list[tuple[int, str]] = []
    for run in repository.stale_running(session, cutoff, mlflow_older_than=mlflow_cutoff):
        silence = timeout_seconds
        if run.queue == MLFLOW_QUEUE and mlflow_timeout_seconds is not None:
            silence = mlflow_timeout_seconds
        guard = [
            Run.status == "running",
            Run.attempt == run.attempt,
            Run.heartbeat_at == run.heartbeat_at,
            Run.cancel_requested.is_(run.cancel_requested),  # a cancel landing meanwhile is not lost
        ]
        attempt, worker, last_seen = run.attempt, run.worker, run.heartbeat_at
        this_one = attempts.numbered(attempt, run.released, run.max_attempts)
        since = f"no heartbeat since {attempts.stamp(last_seen)}" if last_seen else "no heartbeat"
        lost = f"worker {worker} lost ({since}, timeout {silence:.0f}s)"
        ended_at = last_seen or now
        if run.cancel_requested:  # a cancel asked of a worker that then died is still a cancel
            values_c: dict[str, object] = {"status": "cancelled", "finished_at": now}
            if repository.transition(session, run.id, guard, values_c):
                attempts.closed(session, run.id, attempt, "lost", ended_at)
                attempts.log(session, run, f"attempt {attempt} lost: {lost}; it was cancelled", now)
                _activity(session, run, "cancelled", f"run {run.id} cancelled (its worker was lost)")
                outcomes.append((run.id, "cancelled"))
        elif run.kind == EXTERNAL_KIND:  # its script is gone: no worker can go on with it (backend/tracking/)
            crashed = f"crashed: no heartbeat for {silence:.0f} s"
            values_x: dict[str, object] = {"status": "failed", "finished_at": now, "error": crashed}
            if repository.transition(session, run.id, guard, values_x):
                attempts.closed(session, run.id, attempt, "lost", ended_at)
                attempts.log(session, run, f"attempt {attempt} {crashed} ({since}): failed", now)
                _activity(
                    session,
                    run,
                    "failed",
                    f"external run {run.id} (#{run.index + 1}) crashed: its script sent no heartbeat "
                    f"for {silence:.0f} s ({since})",
                )
                outcomes.append((run.id, "failed"))
        elif attempts.counted(run) < run.max_attempts:  # released attempts are not counted
            values: dict[str, object] = {
                "status": "queued",
                "attempt": attempt + 1,
                "dispatched": False,
                "dispatched_at": None,
                "worker": None,
                **NO_PROGRESS,
                "progress_message": f"worker {worker} lost (no heartbeat for {timeout_seconds:.0f}s): requeued",
            }
            if repository.transition(session, run.id, guard, values):
                attempts.closed(session, run.id, attempt, "lost", ended_at)
                next_ = f"attempt {attempts.numbered(attempt + 1, run.released, run.max_attempts)}"
                attempts.log(session, run, f"attempt {attempt} lost: {lost}; requeued as {next_}", now)
                _activity(
                    session,
                    run,
                    "requeued",
                    f"run {run.id} (#{run.index + 1}): attempt {attempt} lost ({worker}: {since}), "
                    f"requeued as {next_}",
                )
                outcomes.append((run.id, "requeued"))
        else:
            values = {
                "status": "failed",
                "finished_at": now,
                "error": f"worker {worker} lost (no heartbeat for {timeout_seconds:.0f}s) "
                f"at attempt {this_one}",
            }
            if repository.transition(session, run.id, guard, values):
                attempts.closed(session, run.id, attempt, "lost", ended_at)
                attempts.log(
                    session,
                    run,
                    f"attempt {attempt} lost: {lost}; failed (the last of {run.max_attempts})",
                    now,
                )
                _activity(
                    session,
                    run,
                    "failed",
                    f"run {run.id} (#{run.index + 1}) failed: worker {worker} lost at the last attempt "
                    f"({this_one}; {since})",
                )
                outcomes.append((run.id, "failed"))
    return outcomes


def resumed(session: Session, run: Run, body: ResumedIn) -> None:
    """The attempt's worker resumed the run from its checkpoint at ``body.step`` (only the worker knows:
    ``ctx.load_checkpoint()`` found one): noted once per attempt, in the log and the feed."""
    check_writer(run, body.attempt)
    if not attempts.resumed(session, run.id, body.attempt, body.step):
        return
    now = utcnow()
    attempts.log(session, run, f"attempt {body.attempt} resumed from the checkpoint at step {body.step}", now)
    _activity(
        session,
        run,
        "resumed",
        f"run {run.id} (#{run.index + 1}) resumed from its checkpoint at step {body.step} "
        f"(attempt {body.attempt}, worker {run.worker})",
    )


def add_logs(session: Session, run: Run, lines: list[str], attempt: int | None = None) -> None:
    check_writer(run, attempt)
    now = utcnow()
    session.add_all(RunLog(run_id=run.id, time=now, line=line[:10_000]) for line in lines)


def logs_after(session: Session, run: Run, after: int, limit: int) -> list[RunLog]:
    """The run's log lines after sequence number ``after``, at most ``limit``, in order."""
    return repository.logs_after(session, run.id, after, limit)
