"""All queries on experiments."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from backend.db import driver_rows
from backend.models import Experiment, ExperimentTag, Review, Run, Star


def status_counts(session: Session, experiment_ids: list[int]) -> dict[int, dict[str, int]]:
    out: dict[int, dict[str, int]] = defaultdict(dict)
    if not experiment_ids:
        return out
    stmt = (
        select(Run.experiment_id, Run.status, func.count())
        .where(Run.experiment_id.in_(experiment_ids))
        .group_by(Run.experiment_id, Run.status)
    )
    for eid, status, n in session.execute(stmt):
        out[eid][status] = n
    return out


def tags_of(session: Session, experiment_ids: list[int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = defaultdict(list)
    if experiment_ids:
        stmt = (
            select(ExperimentTag)
            .where(ExperimentTag.experiment_id.in_(experiment_ids))
            .order_by(ExperimentTag.tag)
        )
        for t in session.scalars(stmt):
            out[t.experiment_id].append(t.tag)
    return out


def review_states(session: Session, experiment_ids: list[int]) -> dict[int, str]:
    """The latest review's state per experiment."""
    out: dict[int, str] = {}
    if experiment_ids:
        stmt = select(Review).where(Review.experiment_id.in_(experiment_ids)).order_by(Review.id)
        for r in session.scalars(stmt):
            out[r.experiment_id] = r.state
    return out


def starred(session: Session, user_id: int | None, experiment_ids: list[int]) -> set[int]:
    if user_id is None or not experiment_ids:
        return set()
    stmt = select(Star.experiment_id).where(Star.user_id == user_id, Star.experiment_id.in_(experiment_ids))
    return set(session.scalars(stmt))


def _listed(project_ids: list[int] | None, kind: str | None, condition: Any) -> Select[Any]:
    stmt = select(Experiment)
    if project_ids is not None:
        stmt = stmt.where(Experiment.project_id.in_(project_ids))
    if kind:
        stmt = stmt.where(Experiment.kind == kind)
    if condition is not None:
        stmt = stmt.where(condition)
    return stmt


def page(
    session: Session,
    project_ids: list[int] | None,
    kind: str | None,
    limit: int,
    after_id: int | None,
    condition: Any = None,
    desc: bool = True,
) -> list[Experiment]:
    """A keyset page by id (newest first when ``desc``); ``condition``: a query-language filter."""
    stmt = _listed(project_ids, kind, condition)
    if after_id is not None:
        stmt = stmt.where(Experiment.id < after_id if desc else Experiment.id > after_id)
    order = Experiment.id.desc() if desc else Experiment.id.asc()
    return list(session.scalars(stmt.order_by(order).limit(limit)))


def page_ordered(
    session: Session,
    project_ids: list[int] | None,
    kind: str | None,
    condition: Any,
    order: list[Any],
    offset: int,
    limit: int,
) -> list[Experiment]:
    """An offset page in ``order`` (ORDER BY clauses ending with a unique key)."""
    stmt = _listed(project_ids, kind, condition).order_by(*order).offset(offset).limit(limit)
    return list(session.scalars(stmt))


def runs_of(session: Session, experiment_id: int) -> list[Run]:
    return list(session.scalars(select(Run).where(Run.experiment_id == experiment_id).order_by(Run.index)))


# The runs table's columns as the driver gives them: no ORM entities, no type processing per value (the
# JSON column's decoding and the timestamps' conversion cost ~60% of a 10,000-run table through the ORM).
_RUN_COLUMNS = (
    'SELECT id, "index", status, attempt, created_at, started_at, finished_at, CAST(params AS TEXT), name, released'
    " FROM runs"
    ' WHERE experiment_id = {p} ORDER BY "index"'
)


_RUN_TABLE_REV = (
    "SELECT count(*), coalesce(sum(id), 0), coalesce(sum(table_rev), 0) FROM runs WHERE experiment_id = {p}"
)


def run_table_rev(session: Session, experiment_id: int) -> tuple[int, int, int]:
    """``(runs, sum of ids, sum of table_rev)``: changes when a run is added or removed or a column of
    the runs table changes (``runs.table_rev``, migration 0006); read from an index alone."""
    count, ids, revs = driver_rows(session, _RUN_TABLE_REV, [experiment_id])[0]
    return int(count), int(ids), int(revs)


_RUN_SPECS = (
    "SELECT id, coalesce(spec_text, CAST(spec AS TEXT)), CAST(logged_params AS TEXT) FROM runs"
    ' WHERE experiment_id = {p} ORDER BY "index"'
)


def run_specs(session: Session, experiment_id: int) -> list[tuple[int, str, str | None]]:
    """Each run's ``(id, resolved spec, logged params)`` in index order, both as JSON text (the export's
    every-field columns; the runs table itself reads no specs)."""
    return [(int(i), s, p) for i, s, p in driver_rows(session, _RUN_SPECS, [experiment_id])]


def run_columns(session: Session, experiment_id: int) -> list[tuple[Any, ...]]:
    """The runs table's rows ``(id, index, status, attempt, created_at, started_at, finished_at,
    params, name, released)`` in index order, raw: timestamps as the driver returns them (SQLite: text), params as JSON
    text. 10,000 runs in one select, no specs."""
    return driver_rows(session, _RUN_COLUMNS, [experiment_id])


# Each run's attempts (migration 0013) in one grouped read: the seconds of its ended attempts (the span
# ``attempts.duration`` gives an ended one: claim to end, a lost one ending at its last heartbeat) and the
# start of its running attempt. The seconds are computed by the database (per dialect), not per row here.
_ATTEMPT_SECONDS = {
    # the stored text ``2026-11-23 18:18:34.581926``: whole seconds by strftime and the microseconds from
    # the text, summed as integers (julianday keeps milliseconds only; float fractions add rounding)
    "sqlite": "sum(CASE WHEN a.ended_at IS NOT NULL THEN max(0,"
    " (strftime('%s', a.ended_at) - strftime('%s', a.started_at)) * 1000000"
    " + CAST(substr(a.ended_at, 21) AS INTEGER) - CAST(substr(a.started_at, 21) AS INTEGER))"
    " ELSE 0 END) / 1000000.0",
    "postgresql": "sum(CASE WHEN a.ended_at IS NOT NULL"
    " THEN greatest(0.0, extract(epoch FROM a.ended_at - a.started_at)) ELSE 0.0 END)",
}
_RUN_ATTEMPTS = (
    "SELECT a.run_id, {seconds}, max(CASE WHEN a.ended_at IS NULL THEN a.started_at END)"
    " FROM run_attempts a JOIN runs r ON r.id = a.run_id WHERE r.experiment_id = {{p}} GROUP BY a.run_id"
)


def run_attempt_times(session: Session, experiment_id: int) -> dict[int, tuple[float, Any]]:
    """``{run id: (seconds of its ended attempts, start of its running attempt or None)}`` for the runs
    of the experiment that have attempt rows (a run that started before migration 0013 has none); the
    start raw, as ``run_columns`` gives timestamps."""
    seconds = _ATTEMPT_SECONDS["postgresql" if session.get_bind().dialect.name == "postgresql" else "sqlite"]
    rows = driver_rows(session, _RUN_ATTEMPTS.format(seconds=seconds), [experiment_id])
    return {int(run_id): (float(ended or 0.0), start) for run_id, ended, start in rows}
