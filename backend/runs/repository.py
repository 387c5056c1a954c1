"""All queries on runs, their logs, tags and latest metric values (what a run shows). Lifecycle transitions are conditional UPDATEs, so two callers
racing on one run (a redelivered task, a late heartbeat against the reaper) cannot both win."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, func, or_, select, update
from sqlalchemy.orm import Session

from backend.db import utcnow
from backend.models import MetricLatest, Run, RunLog, RunTag
from common.nonfinite import Shown, shown
from common.runs import MLFLOW_QUEUE


def transition(session: Session, run_id: int, where: list[Any], values: dict[str, Any]) -> bool:
    """UPDATE the run only if ``where`` holds; True if it did (one winner under concurrency)."""
    stmt = update(Run).where(Run.id == run_id, *where).values(updated_at=utcnow(), **values)
    result = session.execute(stmt.execution_options(synchronize_session=False))
    return bool(getattr(result, "rowcount", 0))


def stale_running(
    session: Session, older_than: datetime, limit: int = 100, mlflow_older_than: datetime | None = None
) -> list[Run]:
    """Running runs whose last heartbeat is older than ``older_than``; a run MLflow's client drives (queue
    ``MLFLOW_QUEUE``) once it is older than ``mlflow_older_than`` (when given)."""
    silent = Run.heartbeat_at < older_than
    if mlflow_older_than is not None:
        silent = or_(
            and_(Run.queue != MLFLOW_QUEUE, silent),
            and_(Run.queue == MLFLOW_QUEUE, Run.heartbeat_at < mlflow_older_than),
        )
    stmt = (
        select(Run)
        .where(Run.status == "running", or_(Run.heartbeat_at.is_(None), silent))
        .order_by(Run.id)
        .limit(limit)
    )
    return list(session.scalars(stmt))


def undispatched(session: Session, resend_before: datetime, limit: int = 200) -> list[Run]:
    """Queued runs never sent, and queued runs sent before ``resend_before`` (a lost broker message)."""
    stale = and_(Run.dispatched.is_(True), Run.dispatched_at < resend_before)
    stmt = select(Run).where(Run.status == "queued", or_(Run.dispatched.is_(False), stale))
    return list(session.scalars(stmt.order_by(Run.id).limit(limit)))


def filtered(
    project_ids: list[int] | None,
    experiment_id: int | None,
    status: list[str] | None,
    kind: str | None,
    tag: str | None,
) -> Select[Any]:
    stmt = select(Run)
    if project_ids is not None:
        stmt = stmt.where(Run.project_id.in_(project_ids))
    if experiment_id is not None:
        stmt = stmt.where(Run.experiment_id == experiment_id)
    if status:
        stmt = stmt.where(Run.status.in_(status))
    if kind:
        stmt = stmt.where(Run.kind == kind)
    if tag:
        stmt = stmt.where(Run.id.in_(select(RunTag.run_id).where(RunTag.tag == tag)))
    return stmt


def page_by_id(
    session: Session, stmt: Select[Any], desc: bool, after_id: int | None, limit: int
) -> list[Run]:
    """Keyset page on the id (ids grow with creation time, so this is also the created_at order)."""
    if after_id is not None:
        stmt = stmt.where(Run.id < after_id if desc else Run.id > after_id)
    order = Run.id.desc() if desc else Run.id.asc()
    return list(session.scalars(stmt.order_by(order).limit(limit)))


# page_by_metric's walk of the index: candidates taken in chunks of these sizes (then the rest at once)
METRIC_CHUNKS = (1000, 8000, 64000)


def page_by_metric(
    session: Session,
    stmt: Select[Any],
    key: str,
    column: Any,
    desc: bool,
    after: tuple[float, int] | None,
    after_missing: int | None,
    limit: int,
) -> list[tuple[Run, float | None]]:
    """A keyset page sorted by a ``metric_latest`` column (``value``, ``vmin``, ``vmax``) of ``key``:
    ``[(run, its value)]``, the id ascending among equal values, then the runs without a value by id (their
    value None). ``after``: the (value, id) of the previous page's last row when it had a value;
    ``after_missing``: its id when it had none.

    The valued part walks ``metric_latest``'s (key, value) index in order, a chunk of candidates at a time
    (``METRIC_CHUNKS``: 1,000, then 8,000, then 64,000, then all the rest), joins each chunk to the runs
    that ``stmt`` keeps and stops once it has ``limit`` rows: a filter that keeps one run in ten reads
    ~500 index entries for a page of 50, never a sort of every run of a project. The chunks are explicit
    because the planner cannot estimate a query-language filter (a spec path, a tag) and, guessing it
    rare, would rather filter every run and sort them (hundreds of ms at 1,000,000 runs)."""
    rows: list[tuple[Run, float | None]] = []
    if after_missing is None:
        boundary = after
        for chunk in (*METRIC_CHUNKS, None):
            cand = select(MetricLatest.run_id, column.label("v")).where(
                MetricLatest.key == key, column.is_not(None)
            )
            if boundary is not None:
                value, run_id = boundary
                beyond = column < value if desc else column > value
                cand = cand.where(or_(beyond, and_(column == value, MetricLatest.run_id > run_id)))
            cand = cand.order_by(column.desc() if desc else column.asc(), MetricLatest.run_id.asc())
            if chunk is not None:
                cand = cand.limit(chunk)
            c = cand.subquery("candidates")
            valued = stmt.add_columns(c.c.v).join(c, c.c.run_id == Run.id)
            order = [c.c.v.desc() if desc else c.c.v.asc(), Run.id.asc()]
            need = limit - len(rows)
            rows += [(run, float(v)) for run, v in session.execute(valued.order_by(*order).limit(need))]
            if len(rows) >= limit or chunk is None:
                break
            # the chunk's last candidate in walk order (and how many it held): the next chunk starts after it
            reverse = [c.c.v.asc() if desc else c.c.v.desc(), c.c.run_id.desc()]
            last = session.execute(
                select(c.c.v, c.c.run_id, func.count().over()).order_by(*reverse).limit(1)
            ).first()
            if last is None or int(last[2]) < chunk:  # the index has no candidates left
                break
            boundary = (float(last[0]), int(last[1]))
        if len(rows) >= limit:
            return rows
    valued_ids = select(MetricLatest.run_id).where(MetricLatest.key == key, column.is_not(None))
    missing = stmt.where(Run.id.not_in(valued_ids))
    if after_missing is not None:
        missing = missing.where(Run.id > after_missing)
    rows += [(run, None) for run in session.scalars(missing.order_by(Run.id.asc()).limit(limit - len(rows)))]
    return rows


def page_ordered(session: Session, stmt: Select[Any], order: list[Any], offset: int, limit: int) -> list[Run]:
    """An offset page of ``stmt`` in ``order`` (ORDER BY clauses that end with a unique key)."""
    return list(session.scalars(stmt.order_by(*order).offset(offset).limit(limit)))


def run_tags_of(session: Session, run_ids: list[int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = defaultdict(list)
    for i in range(0, len(run_ids), 500):
        stmt = select(RunTag).where(RunTag.run_id.in_(run_ids[i : i + 500])).order_by(RunTag.tag)
        for t in session.scalars(stmt):
            out[t.run_id].append(t.tag)
    return out


def latest_metrics(session: Session, run_id: int) -> dict[str, tuple[int, Shown]]:
    """``{key: (step, value)}``: each of the run's series at its largest step (a non-finite value as its
    label, ``"NaN"``: ``common.nonfinite.shown``)."""
    stmt = (
        select(MetricLatest.key, MetricLatest.step, MetricLatest.value, MetricLatest.nonfinite)
        .where(MetricLatest.run_id == run_id)
        .order_by(MetricLatest.key)
    )
    return {k: (int(s), shown(v, code)) for k, s, v, code in session.execute(stmt)}


def metric_summaries(session: Session, run_ids: Sequence[int]) -> dict[int, dict[str, Shown]]:
    """Each run's summary, ``{key: value at the key's largest step}`` (keys sorted; a non-finite value as
    its label), in one query."""
    out: dict[int, dict[str, Shown]] = {rid: {} for rid in run_ids}
    if not out:
        return out
    stmt = (
        select(MetricLatest.run_id, MetricLatest.key, MetricLatest.value, MetricLatest.nonfinite)
        .where(MetricLatest.run_id.in_(list(out)))
        .order_by(MetricLatest.run_id, MetricLatest.key)
    )
    for rid, key, value, code in session.execute(stmt):
        out[rid][key] = shown(value, code)
    return out


def logs_after(session: Session, run_id: int, after: int, limit: int) -> list[RunLog]:
    stmt = select(RunLog).where(RunLog.run_id == run_id, RunLog.id > after).order_by(RunLog.id).limit(limit)
    return list(session.scalars(stmt))


def last_log_seq(session: Session, run_id: int) -> int:
    return int(
        session.scalar(select(func.coalesce(func.max(RunLog.id), 0)).where(RunLog.run_id == run_id)) or 0
    )


def logged_params(session: Session, run_id: int) -> tuple[dict[str, Any], int]:
    """The run's logged params (flattened) and their revision, as committed now (not the session's copy)."""
    params, rev = session.execute(
        select(Run.logged_params, Run.logged_params_rev).where(Run.id == run_id)
    ).one()
    return dict(params or {}), int(rev)


def set_logged_params(
    session: Session, run_id: int, params: dict[str, Any], rev: int, where: list[Any]
) -> bool:
    """Store ``params`` as revision ``rev + 1`` if the stored revision is still ``rev`` and ``where``
    holds; False otherwise (another post merged meanwhile, or the writing attempt lost the run)."""
    stmt = (
        update(Run)
        .where(Run.id == run_id, Run.logged_params_rev == rev, *where)
        .values(logged_params=params, logged_params_rev=rev + 1, updated_at=utcnow())
    )
    result = session.execute(stmt.execution_options(synchronize_session=False))
    return bool(getattr(result, "rowcount", 0))


def owned(attempt: int) -> list[Any]:
    """The condition that ``attempt`` still owns its run (running at that attempt)."""
    return [and_(Run.status == "running", Run.attempt == attempt)]
