"""The queries of the MLflow-compatible routes: projects and experiments by name, the run and experiment
searches (MLflow's filter clauses compiled to SQL, every value a bound parameter), each run's latest metric
points with their times, a metric's history a page at a time, and the labels that hold MLflow's tags.

A run's MLflow tag ``key`` = ``value`` is its label ``key=value`` (``key`` alone for an empty value), so
the SQL reads a tag's value back from the label: the part after ``key=``.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import String, and_, case, cast, delete, exists, false, func, literal, or_, select, true
from sqlalchemy.orm import Session, undefer
from sqlalchemy.sql.elements import ColumnElement

from backend.mlflowcompat.filters import Clause, Order, invalid
from backend.models import Experiment, ExperimentTag, Metric, MetricLatest, Project, Run, RunTag
from common import nonfinite
from common.mlflow_names import MLFLOW_STATUS

Bool = ColumnElement[bool]

_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_TEXT_OPS = ("=", "!=", "LIKE", "ILIKE", "IN", "NOT IN", "IS NULL", "IS NOT NULL")
PLATFORM_STATUS = {"RUNNING": "running", "SCHEDULED": "queued", **{v: k for k, v in MLFLOW_STATUS.items()}}
"""MLflow's run statuses as the platform names them (``MLFLOW_STATUS`` the other way, plus the two an
unfinished run has)."""


def project_named(session: Session, name: str) -> Project | None:
    return session.scalars(select(Project).where(Project.name == name)).first()


def project_and_run(session: Session, name: str, run_id: int) -> tuple[Project | None, Run | None]:
    """The project of that name and its run of that id (None where the project has no such run), in one
    query: every write of MLflow's client names both."""
    stmt = (
        select(Project, Run)
        .outerjoin(Run, and_(Run.id == run_id, Run.project_id == Project.id))
        .where(Project.name == name)
    )
    row = session.execute(stmt).first()
    return (None, None) if row is None else (row[0], row[1])


def experiment_named_any(session: Session, project_id: int, name: str) -> Experiment | None:
    """The project's oldest experiment of that name, of any kind."""
    stmt = select(Experiment).where(Experiment.project_id == project_id, Experiment.name == name)
    return session.scalars(stmt.order_by(Experiment.id).limit(1)).first()


# -- labels that hold tags ------------------------------------------------------------------------------------


def _is_key(column: Any, key: str) -> Bool:
    """The label ``column`` holds the tag ``key``: it is ``key`` or starts with ``key=`` (compared by
    characters: LIKE folds ASCII case on SQLite)."""
    return or_(column == key, func.substr(column, 1, len(key) + 1) == key + "=")


def _tag_value(column: Any, key: str) -> Any:
    """The value of the tag ``key`` a label holds (what follows ``key=``; empty for ``key`` alone)."""
    return case((column == key, literal("", String)), else_=func.substr(column, len(key) + 2))


def run_labels_of_key(session: Session, run_id: int, key: str) -> list[str]:
    stmt = select(RunTag.tag).where(RunTag.run_id == run_id, _is_key(RunTag.tag, key))
    return list(session.scalars(stmt))


def delete_run_labels(session: Session, run_id: int, labels: Sequence[str]) -> None:
    if labels:
        session.execute(delete(RunTag).where(RunTag.run_id == run_id, RunTag.tag.in_(list(labels))))


def experiment_labels_of_key(session: Session, experiment_id: int, key: str) -> list[str]:
    stmt = select(ExperimentTag.tag).where(
        ExperimentTag.experiment_id == experiment_id, _is_key(ExperimentTag.tag, key)
    )
    return list(session.scalars(stmt))


def delete_experiment_labels(session: Session, experiment_id: int, labels: Sequence[str]) -> None:
    if labels:
        session.execute(
            delete(ExperimentTag).where(
                ExperimentTag.experiment_id == experiment_id, ExperimentTag.tag.in_(list(labels))
            )
        )


def experiment_labels(session: Session, experiment_ids: Sequence[int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = defaultdict(list)
    ids = list(experiment_ids)
    for i in range(0, len(ids), 500):
        stmt = (
            select(ExperimentTag.experiment_id, ExperimentTag.tag)
            .where(ExperimentTag.experiment_id.in_(ids[i : i + 500]))
            .order_by(ExperimentTag.tag)
        )
        for experiment_id, tag in session.execute(stmt):
            out[experiment_id].append(tag)
    return out


# -- metrics ---------------------------------------------------------------------------------------------------


def latest_points(
    session: Session, run_ids: Sequence[int]
) -> dict[int, list[tuple[str, int, float | None, datetime]]]:
    """Each run's latest point of every key (its largest step): ``(key, step, value, time)`` by key."""
    out: dict[int, list[tuple[str, int, float | None, datetime]]] = defaultdict(list)
    ids = list(run_ids)
    for i in range(0, len(ids), 500):
        stmt = (
            select(
                MetricLatest.run_id,
                MetricLatest.key,
                MetricLatest.step,
                Metric.value,
                Metric.nonfinite,
                Metric.time,
            )
            .join(
                Metric,
                and_(
                    Metric.run_id == MetricLatest.run_id,
                    Metric.key == MetricLatest.key,
                    Metric.step == MetricLatest.step,
                ),
            )
            .where(MetricLatest.run_id.in_(ids[i : i + 500]))
            .order_by(MetricLatest.run_id, MetricLatest.key)
        )
        for run_id, key, step, value, code, time in session.execute(stmt):
            out[run_id].append((key, step, nonfinite.to_float(value, code), time))
    return out


def history(
    session: Session, run_id: int, key: str, after_step: int | None, limit: int
) -> list[tuple[int, float | None, datetime]]:
    """Up to ``limit`` points of one series after ``after_step``, in step order: ``(step, value, time)``,
    the value as logged (NaN and infinities too; None: a gap)."""
    stmt = select(Metric.step, Metric.value, Metric.nonfinite, Metric.time).where(
        Metric.run_id == run_id, Metric.key == key
    )
    if after_step is not None:
        stmt = stmt.where(Metric.step > after_step)
    rows = session.execute(stmt.order_by(Metric.step).limit(limit))
    return [(s, nonfinite.to_float(v, k), t) for s, v, k, t in rows]


# -- the filter language ----------------------------------------------------------------------------------------


def _text(value: Any, clause: Clause, field: str) -> str:
    if not isinstance(value, str):
        raise invalid(field, f"{clause.entity} {clause.key!r} holds text: compare it with a quoted string")
    return value


def _number(value: Any, clause: Clause, field: str) -> float:
    if not isinstance(value, float):
        raise invalid(field, f"{clause.entity} {clause.key!r} is a number: compare it with a number")
    return value


def _like(column: Any, pattern: str, fold: bool, dialect: str) -> Bool:
    """MLflow's LIKE (case-sensitive) and ILIKE on both databases: SQLite's LIKE folds ASCII case, so a
    case-sensitive match there is a GLOB of the same pattern."""
    if fold:
        return func.lower(column).like(pattern.lower())
    if dialect == "postgresql":
        return column.like(pattern)
    glob = "".join({"%": "*", "_": "?", "*": "[*]", "?": "[?]", "[": "[[]"}.get(ch, ch) for ch in pattern)
    return column.op("GLOB")(glob)


def _text_test(column: Any, clause: Clause, dialect: str, field: str) -> Bool:
    """A nullable text ``column`` against a clause (a missing value meets no test but IS NULL)."""
    op = clause.op
    if op not in _TEXT_OPS:
        raise invalid(field, f"{clause.entity} {clause.key!r} takes {', '.join(_TEXT_OPS)}; not {op}")
    if op == "IS NULL":
        return column.is_(None)
    if op == "IS NOT NULL":
        return column.is_not(None)
    if op in ("IN", "NOT IN"):
        values = [_text(v, clause, field) for v in clause.value or ()]  # type: ignore[union-attr]
        test = column.in_(values) if op == "IN" else column.not_in(values)
    elif op in ("LIKE", "ILIKE"):
        test = _like(column, _text(clause.value, clause, field), op == "ILIKE", dialect)
    else:
        test = _COMPARE[op](column, _text(clause.value, clause, field))
    return and_(column.is_not(None), test)


def _json_text(column: Any, path: Sequence[str], dialect: str, jsonb: bool) -> Any:
    """The text of the JSON value at ``path`` (a string as it is, a number as written), NULL when absent."""
    if dialect == "postgresql":
        fn = func.jsonb_extract_path_text if jsonb else func.json_extract_path_text
        return fn(column, *[literal(p, String) for p in path])
    where = literal("$" + "".join('."' + p.replace('"', '""') + '"' for p in path), String)
    return cast(func.json_extract(column, where), String)


def param_text(key: str, dialect: str) -> Any:
    """A run's param ``key`` as MLflow shows it: the value the run logged, else its spec's at that path."""
    return func.coalesce(
        _json_text(Run.logged_params, [key], dialect, jsonb=False),
        _json_text(Run.spec, key.split("."), dialect, jsonb=True),
    )


def run_name() -> Any:
    """A run's MLflow name: its name, else ``run-<id>`` (what the mirror names it)."""
    return func.coalesce(Run.name, literal("run-", String) + cast(Run.id, String))


def _millis(value: float) -> datetime:
    return datetime.fromtimestamp(value / 1000, tz=UTC)


def _time_test(column: Any, clause: Clause, field: str) -> Bool:
    if clause.op not in _COMPARE:
        raise invalid(field, f"{clause.key} takes =, !=, <, <=, > or >= (milliseconds since the epoch)")
    return and_(
        column.is_not(None), _COMPARE[clause.op](column, _millis(_number(clause.value, clause, field)))
    )


def _ids(values: Sequence[Any]) -> list[int]:
    """MLflow's run or experiment ids (strings) as the platform's; one that is no id matches nothing."""
    out = []
    for v in values:
        text = str(v)
        out.append(int(text) if text.isascii() and text.isdigit() and len(text) < 12 else -1)
    return out


def _id_test(column: Any, clause: Clause, field: str) -> Bool:
    if clause.op in ("IN", "NOT IN"):
        ids = _ids(clause.value or ())  # type: ignore[arg-type]
        return column.in_(ids) if clause.op == "IN" else column.not_in(ids)
    if clause.op in ("=", "!="):
        value = clause.value
        (one,) = _ids([int(value) if isinstance(value, float) and value.is_integer() else value])
        return column == one if clause.op == "=" else column != one
    raise invalid(field, f"{clause.key} takes =, !=, IN or NOT IN")


def _status_test(clause: Clause, field: str) -> Bool:
    values = clause.value if isinstance(clause.value, tuple) else (clause.value,)
    statuses = []
    for v in values:
        status = PLATFORM_STATUS.get(str(v).upper())
        if status is None:
            raise invalid(field, f"status {v!r} is not one of {', '.join(PLATFORM_STATUS)}")
        statuses.append(status)
    ops = {"=": Run.status.in_, "IN": Run.status.in_, "!=": Run.status.not_in, "NOT IN": Run.status.not_in}
    if clause.op not in ops:
        raise invalid(field, "status takes =, !=, IN or NOT IN")
    return ops[clause.op](statuses)


def _stage_test(clause: Clause, field: str) -> Bool:
    if clause.op not in ("=", "!=") or clause.value not in ("active", "deleted"):
        raise invalid(field, "lifecycle_stage takes = or != 'active' or 'deleted' (nothing is deleted here)")
    return true() if (clause.value == "active") == (clause.op == "=") else false()


def _label_test(tag: Any, owner: Any, owner_id: Any, clause: Clause, dialect: str, field: str) -> Bool:
    """A tag held by a label (of a run or an experiment) against a clause."""
    has_key = _is_key(tag, clause.key)
    if clause.op == "IS NULL":
        return ~exists().where(owner == owner_id, has_key)
    if clause.op == "IS NOT NULL":
        return exists().where(owner == owner_id, has_key)
    return exists().where(
        owner == owner_id, has_key, _text_test(_tag_value(tag, clause.key), clause, dialect, field)
    )


def _run_condition(clause: Clause, dialect: str, field: str) -> Bool:
    if clause.entity == "metric":
        where = [MetricLatest.run_id == Run.id, MetricLatest.key == clause.key]
        if clause.op == "IS NULL":
            return ~exists().where(*where)
        if clause.op == "IS NOT NULL":
            return exists().where(*where)
        if clause.op not in _COMPARE:
            raise invalid(field, f"metric {clause.key!r} takes =, !=, <, <=, >, >=, IS NULL or IS NOT NULL")
        value = _number(clause.value, clause, field)
        return exists().where(*where, _COMPARE[clause.op](MetricLatest.value, value))
    if clause.entity == "param":
        return _text_test(param_text(clause.key, dialect), clause, dialect, field)
    if clause.entity == "tag":
        if clause.key == "mlflow.runName":
            return _text_test(run_name(), clause, dialect, field)
        if clause.key.startswith("mlflow."):
            raise invalid(
                field, f"tag {clause.key!r}: of MLflow's own tags only mlflow.runName is searchable here"
            )
        return _label_test(RunTag.tag, RunTag.run_id, Run.id, clause, dialect, field)
    name = clause.key.lower()
    if name in ("run_id", "run_uuid", "id"):
        return _id_test(Run.id, clause, field)
    if name == "run_name":
        return _text_test(run_name(), clause, dialect, field)
    if name == "status":
        return _status_test(clause, field)
    if name == "start_time":
        return _time_test(Run.started_at, clause, field)
    if name == "end_time":
        return _time_test(Run.finished_at, clause, field)
    if name in ("created", "creation_time"):
        return _time_test(Run.created_at, clause, field)
    if name == "lifecycle_stage":
        return _stage_test(clause, field)
    raise invalid(
        field,
        f"attribute {clause.key!r} is not searchable here: run_id, run_name, status, start_time, end_time, "
        "lifecycle_stage",
    )


def _nulls_last(expr: Any, ascending: bool) -> list[Any]:
    return [case((expr.is_(None), 1), else_=0), expr.asc() if ascending else expr.desc()]


def _run_order(order: Order, dialect: str, field: str) -> list[Any]:
    if order.entity == "metric":
        value = (
            select(MetricLatest.value)
            .where(MetricLatest.run_id == Run.id, MetricLatest.key == order.key)
            .correlate(Run)
            .scalar_subquery()
        )
        return _nulls_last(value, order.ascending)
    if order.entity == "param":
        return _nulls_last(param_text(order.key, dialect), order.ascending)
    if order.entity == "tag":
        if order.key == "mlflow.runName":
            return _nulls_last(run_name(), order.ascending)
        value = (
            select(_tag_value(RunTag.tag, order.key))
            .where(RunTag.run_id == Run.id, _is_key(RunTag.tag, order.key))
            .correlate(Run)
            .limit(1)
            .scalar_subquery()
        )
        return _nulls_last(value, order.ascending)
    columns = {
        "start_time": Run.started_at,
        "end_time": Run.finished_at,
        "created": Run.created_at,
        "run_name": run_name(),
        "status": Run.status,
        "run_id": Run.id,
    }
    column = columns.get(order.key.lower())
    if column is None:
        raise invalid(
            field, f"runs are ordered by metrics, params, tags or {', '.join(columns)}; not {order.key!r}"
        )
    return _nulls_last(column, order.ascending)


def search_runs(
    session: Session,
    project_id: int,
    experiment_ids: Sequence[int] | None,
    clauses: Sequence[Clause],
    orders: Sequence[Order],
    offset: int,
    limit: int,
) -> list[Run]:
    """A page of the project's runs (of ``experiment_ids``, or all) meeting every clause, in ``orders``
    (then newest first), their provenance loaded (it holds MLflow's own tags)."""
    dialect = session.get_bind().dialect.name
    stmt = select(Run).options(undefer(Run.provenance)).where(Run.project_id == project_id)
    if experiment_ids is not None:
        stmt = stmt.where(Run.experiment_id.in_(list(experiment_ids)))
    for clause in clauses:
        stmt = stmt.where(_run_condition(clause, dialect, "filter"))
    ordering: list[Any] = []
    for i, order in enumerate(orders):
        ordering += _run_order(order, dialect, f"order_by[{i}]")
    ordering += [Run.created_at.desc(), Run.id.desc()] if not orders else [Run.id.desc()]
    return list(session.scalars(stmt.order_by(*ordering).offset(offset).limit(limit)))


def _experiment_condition(clause: Clause, dialect: str, field: str) -> Bool:
    if clause.entity == "tag":
        if clause.key == "mlflow.note.content":
            return _text_test(func.nullif(Experiment.description, ""), clause, dialect, field)
        if clause.key.startswith("mlflow."):
            raise invalid(
                field, f"tag {clause.key!r}: of MLflow's own tags only mlflow.note.content is searchable"
            )
        return _label_test(
            ExperimentTag.tag, ExperimentTag.experiment_id, Experiment.id, clause, dialect, field
        )
    if clause.entity != "attribute":
        raise invalid(field, "experiments are searched by their name, id, times and tags")
    name = clause.key.lower()
    if name == "name":
        return _text_test(Experiment.name, clause, dialect, field)
    if name == "experiment_id":
        return _id_test(Experiment.id, clause, field)
    if name in ("creation_time", "last_update_time"):
        return _time_test(Experiment.created_at, clause, field)
    if name == "lifecycle_stage":
        return _stage_test(clause, field)
    raise invalid(
        field, f"attribute {clause.key!r}: experiments are searched by name, experiment_id, creation_time"
    )


def search_experiments(
    session: Session,
    project_id: int,
    clauses: Sequence[Clause],
    orders: Sequence[Order],
    offset: int,
    limit: int,
) -> list[Experiment]:
    dialect = session.get_bind().dialect.name
    stmt = select(Experiment).where(Experiment.project_id == project_id)
    for clause in clauses:
        stmt = stmt.where(_experiment_condition(clause, dialect, "filter"))
    columns = {
        "name": Experiment.name,
        "experiment_id": Experiment.id,
        "creation_time": Experiment.created_at,
        "last_update_time": Experiment.created_at,
    }
    ordering: list[Any] = []
    for i, order in enumerate(orders):
        column = columns.get(order.key.lower()) if order.entity == "attribute" else None
        if column is None:
            raise invalid(
                f"order_by[{i}]", f"experiments are ordered by {', '.join(columns)}; not {order.key!r}"
            )
        ordering.append(column.asc() if order.ascending else column.desc())
    ordering += [Experiment.created_at.desc(), Experiment.id.desc()] if not orders else [Experiment.id.desc()]
    return list(session.scalars(stmt.order_by(*ordering).offset(offset).limit(limit)))
