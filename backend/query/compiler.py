"""Syntax tree to SQLAlchemy: a boolean filter (``where``) and sort keys (``order``) for runs and
experiments. Every literal is a bound parameter; field names, metric keys and JSON paths are bound too.

Two-valued logic: every test is true or false, never NULL. A comparison with a field a row does not have
(no name, no such param, no such metric, a param of another JSON type) is false, ``!=`` included; so
``not (x = 1)`` is true for a row without ``x``, and ``x missing`` finds those rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from fnmatch import fnmatchcase
from typing import Any

from sqlalchemy import (
    Float,
    String,
    and_,
    case,
    cast,
    func,
    literal,
    not_,
    or_,
    select,
    true,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.sql.elements import ColumnElement

from backend.models import Experiment, ExperimentTag, MetricLatest, Result, Run, RunExample, RunTag, User
from backend.query.nodes import And, Compare, Contains, Expr, Field, In, Literal, Not, Now, Or
from backend.query.parser import QueryError
from common.runs import RUN_STATUSES
from worker.specs import manifests

Bool = ColumnElement[bool]

_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


@dataclass(frozen=True)
class Context:
    """What a compilation depends on besides the query: the database dialect (``sqlite`` or
    ``postgresql``) and the time ``now`` and durations are measured from."""

    dialect: str
    now: datetime


def _describe(value: Literal) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Now | datetime | date):
        return "a time"
    return type(value).__name__


def _time(value: Literal, ctx: Context) -> datetime | None:
    if isinstance(value, Now):
        return ctx.now - value.minus
    if isinstance(value, datetime):
        return value
    return None


def _day(value: date) -> tuple[datetime, datetime]:
    start = datetime(value.year, value.month, value.day, tzinfo=UTC)
    return start, start + timedelta(days=1)


# -- field kinds ------------------------------------------------------------------------------------------


class _Kind:
    """How one field compiles. ``column`` may be NULL for a row that lacks the field."""

    what = "a value"

    def compare(self, f: Field, op: str, value: Literal, pos: int, ctx: Context) -> Bool:
        raise QueryError(f"{f.text} does not compare with {_describe(value)}", pos)

    def contains(self, f: Field, value: Literal, pos: int, ctx: Context) -> Bool:
        raise QueryError(f"contains applies to text and tags, not to {f.text} ({self.what})", f.pos)

    def exists(self, f: Field, ctx: Context) -> Bool:
        raise QueryError(f"{f.text} always exists", f.pos)

    def sort(self, f: Field, ctx: Context) -> list[Any]:
        raise QueryError(f"{f.text} cannot be sorted by", f.pos)

    def present(self, f: Field, ctx: Context) -> Bool:
        """The row has the field (what ``not in`` and ``!=`` require besides the values' test)."""
        return true()

    def is_in(self, f: Field, values: tuple[Literal, ...], pos: int, ctx: Context) -> Bool:
        return or_(*(self.compare(f, "=", v, pos, ctx) for v in values))


class _Column(_Kind):
    """A column (or a correlated scalar) of one SQL type: ``py`` the literal types it takes."""

    def __init__(self, column: Any, what: str, nullable: bool, choices: tuple[str, ...] = ()) -> None:
        self.column = column
        self.what = what
        self.nullable = nullable
        self.choices = choices

    def _check(self, f: Field, value: Literal, pos: int) -> None:
        ok = {
            "a number": isinstance(value, int | float) and not isinstance(value, bool),
            "text": isinstance(value, str),
            "a time": isinstance(value, Now | datetime | date),
        }[self.what]
        if not ok:
            raise QueryError(f"{f.text} is {self.what}; {_describe(value)} does not compare with it", pos)
        if self.choices and isinstance(value, str) and value not in self.choices:
            raise QueryError(f"{f.text} is one of {', '.join(self.choices)}; not {value!r}", pos)

    def compare(self, f: Field, op: str, value: Literal, pos: int, ctx: Context) -> Bool:
        self._check(f, value, pos)
        col = self.column
        if isinstance(value, date) and not isinstance(value, datetime):
            start, end = _day(value)  # a date is its whole UTC day
            test = {
                "=": and_(col >= start, col < end),
                "!=": or_(col < start, col >= end),
                "<": col < start,
                "<=": col < end,
                ">": col >= end,
                ">=": col >= start,
            }[op]
        else:
            bound = _time(value, ctx) if self.what == "a time" else value
            test = _OPS[op](col, bound)
        return and_(col.is_not(None), test) if self.nullable else test

    def contains(self, f: Field, value: Literal, pos: int, ctx: Context) -> Bool:
        if self.what != "text":
            return super().contains(f, value, pos, ctx)
        if not isinstance(value, str):
            raise QueryError(f"contains takes a string, not {_describe(value)}", pos)
        return and_(self.column.is_not(None), _substring(self.column, value, ctx))

    def is_in(self, f: Field, values: tuple[Literal, ...], pos: int, ctx: Context) -> Bool:
        if self.what == "a time":
            return super().is_in(f, values, pos, ctx)
        for v in values:
            self._check(f, v, pos)
        test = self.column.in_(list(values))
        return and_(self.column.is_not(None), test) if self.nullable else test

    def exists(self, f: Field, ctx: Context) -> Bool:
        if not self.nullable:
            return super().exists(f, ctx)
        return self.column.is_not(None)

    def present(self, f: Field, ctx: Context) -> Bool:
        return self.column.is_not(None) if self.nullable else true()

    def sort(self, f: Field, ctx: Context) -> list[Any]:
        return [self.column]


def _substring(column: Any, value: str, ctx: Context) -> Bool:
    """Case-sensitive substring on both databases (LIKE folds ASCII case on SQLite only)."""
    if ctx.dialect == "postgresql":
        return func.strpos(column, literal(value, String)) > 0
    return func.instr(column, literal(value, String)) > 0


class _Membership(_Kind):
    """A set of strings (tags): ``=`` / ``contains`` has it, ``in`` has one of them, ``!=`` / ``not in``
    has not, ``exists``: has any."""

    what = "a list of tags"

    def __init__(self, has: Callable[[Any], Bool]) -> None:
        self.has = has  # has(condition on the tag column) -> the row has a tag meeting it

    def compare(self, f: Field, op: str, value: Literal, pos: int, ctx: Context) -> Bool:
        if op not in ("=", "!="):
            raise QueryError(f"{f.text} takes =, !=, in, not in, contains, exists, missing; not {op}", pos)
        if not isinstance(value, str):
            raise QueryError(f"{f.text} holds strings, not {_describe(value)}", pos)
        test = self.has(lambda tag: tag == value)
        return test if op == "=" else not_(test)

    def contains(self, f: Field, value: Literal, pos: int, ctx: Context) -> Bool:
        return self.compare(f, "=", value, pos, ctx)

    def is_in(self, f: Field, values: tuple[Literal, ...], pos: int, ctx: Context) -> Bool:
        for v in values:
            if not isinstance(v, str):
                raise QueryError(f"{f.text} holds strings, not {_describe(v)}", pos)
        return self.has(lambda tag: tag.in_(list(values)))

    def exists(self, f: Field, ctx: Context) -> Bool:
        return self.has(lambda tag: true())


_PG = postgresql.dialect()


class _Json(_Kind):
    """A value at a path of a JSON column (a spec): compared as a number, a string or a boolean by the
    literal's type, and only with stored values of that JSON type (no cast of text to a number can fail)."""

    what = "a spec value"

    def __init__(self, column: Any) -> None:
        self.column = column
        # jsonb on Postgres (runs.spec, experiments.spec: migration 0020) takes the jsonb_* functions, a
        # path lookup in the stored binary value; a json column (text) is re-parsed by each json_* call
        self.prefix = "jsonb" if isinstance(column.type.dialect_impl(_PG), JSONB) else "json"

    def _parts(self, f: Field, ctx: Context) -> tuple[Any, Any, Any]:
        """``(json type, text value, numeric value)``: the type named the same on both databases
        (``number``, ``string``, ``true``, ``false``, ``null``, ``object``, ``array``; NULL: absent)."""
        if ctx.dialect == "postgresql":
            args = [literal(p, String) for p in f.path]
            fn = getattr(func, self.prefix + "_extract_path")
            node = fn(self.column, *args)
            typeof = getattr(func, self.prefix + "_typeof")(node)
            text_ = getattr(func, self.prefix + "_extract_path_text")(self.column, *args)
            kind = case(
                (typeof == "boolean", case((text_ == "true", "true"), else_="false")),
                else_=typeof,
            )
            number = case((typeof == "number", cast(text_, Float)))
            string = case((typeof == "string", text_))
            return kind, string, number
        path = literal("$" + "".join('."' + p.replace('"', '""') + '"' for p in f.path), String)
        typeof = func.json_type(self.column, path)
        kind = case(
            (typeof.in_(["integer", "real"]), "number"),
            (typeof == "text", "string"),
            else_=typeof,
        )
        value = func.json_extract(self.column, path)
        number = case((typeof.in_(["integer", "real"]), cast(value, Float)))
        string = case((typeof == "text", cast(value, String)))
        return kind, string, number

    def _test(self, f: Field, op: str, value: Literal, pos: int, ctx: Context) -> Bool:
        """The comparison for a stored value of the literal's JSON type (false for any other)."""
        kind, string, number = self._parts(f, ctx)
        if isinstance(value, bool):
            if op not in ("=", "!="):
                raise QueryError(f"booleans take = and != only, not {op}", pos)
            return kind == ("true" if value else "false")
        if isinstance(value, int | float):
            return and_(number.is_not(None), _OPS[op](number, float(value)))
        if isinstance(value, str):
            return and_(string.is_not(None), _OPS[op](string, value))
        raise QueryError(f"{f.text} compares with strings, numbers and booleans, not {_describe(value)}", pos)

    def compare(self, f: Field, op: str, value: Literal, pos: int, ctx: Context) -> Bool:
        if op == "!=":
            return and_(self.exists(f, ctx), not_(self._test(f, "=", value, pos, ctx)))
        return self._test(f, op, value, pos, ctx)

    def is_in(self, f: Field, values: tuple[Literal, ...], pos: int, ctx: Context) -> Bool:
        return or_(*(self._test(f, "=", v, pos, ctx) for v in values))

    def contains(self, f: Field, value: Literal, pos: int, ctx: Context) -> Bool:
        if not isinstance(value, str):
            raise QueryError(f"contains takes a string, not {_describe(value)}", pos)
        _, string, _ = self._parts(f, ctx)
        return and_(string.is_not(None), _substring(string, value, ctx))

    def exists(self, f: Field, ctx: Context) -> Bool:
        kind, _, _ = self._parts(f, ctx)
        return and_(kind.is_not(None), kind != "null")

    def present(self, f: Field, ctx: Context) -> Bool:
        return self.exists(f, ctx)

    def sort(self, f: Field, ctx: Context) -> list[Any]:
        _, string, number = self._parts(f, ctx)
        return [number, string]  # numbers first (by value), then strings, then rows without either


def directions(key: str) -> tuple[list[str], list[str]]:
    """``(kinds that minimise key, kinds that maximise it)`` from the kinds' ``metric_directions``."""
    lower: list[str] = []
    upper: list[str] = []
    for name, manifest in manifests().items():
        for pattern, direction in manifest.metric_directions.items():
            if fnmatchcase(key, pattern):
                (lower if direction == "min" else upper).append(name)
                break
    return lower, upper


class _Metric(_Kind):
    """A run's metric: its latest value (``last``, the default), ``min``, ``max`` over its finite values,
    or ``best`` (min or max by the direction the run's kind declares for the key)."""

    what = "a number"

    def _column(self, aggregate: str) -> Any:
        return {"last": MetricLatest.value, "min": MetricLatest.vmin, "max": MetricLatest.vmax}[aggregate]

    def _runs(self, key: str, column: Any, condition: Any) -> Bool:
        sub = select(MetricLatest.run_id).where(MetricLatest.key == key, condition(column))
        return Run.id.in_(sub)

    def _by_direction(self, f: Field, condition: Callable[[Any], Any]) -> Bool:
        key = f.path[0]
        agg = f.aggregate or "last"
        if agg != "best":
            return self._runs(key, self._column(agg), condition)
        lower, upper = directions(key)
        if not lower and not upper:
            raise QueryError(
                f"no kind declares whether {key!r} is better low or high (metric_directions of its "
                f"manifest): use min(metrics.{key}) or max(metrics.{key})",
                f.pos,
            )
        parts = []
        if lower:
            parts.append(and_(Run.kind.in_(lower), self._runs(key, MetricLatest.vmin, condition)))
        if upper:
            parts.append(and_(Run.kind.in_(upper), self._runs(key, MetricLatest.vmax, condition)))
        return or_(*parts)

    def _number(self, f: Field, value: Literal, pos: int) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise QueryError(f"{f.text} is a number; {_describe(value)} does not compare with it", pos)
        return float(value)

    def compare(self, f: Field, op: str, value: Literal, pos: int, ctx: Context) -> Bool:
        v = self._number(f, value, pos)
        return self._by_direction(f, lambda col: and_(col.is_not(None), _OPS[op](col, v)))

    def is_in(self, f: Field, values: tuple[Literal, ...], pos: int, ctx: Context) -> Bool:
        vs = [self._number(f, v, pos) for v in values]
        return self._by_direction(f, lambda col: col.in_(vs))

    def exists(self, f: Field, ctx: Context) -> Bool:
        if f.aggregate is not None:
            return self._by_direction(f, lambda col: col.is_not(None))
        return self._runs(f.path[0], MetricLatest.value, lambda col: true())

    def present(self, f: Field, ctx: Context) -> Bool:
        return self._by_direction(f, lambda col: col.is_not(None))  # a value to compare (not NaN)

    def sort(self, f: Field, ctx: Context) -> list[Any]:
        key = f.path[0]
        agg = f.aggregate or "last"

        def scalar(column: Any) -> Any:
            return (
                select(column)
                .where(MetricLatest.run_id == Run.id, MetricLatest.key == key)
                .correlate(Run)
                .scalar_subquery()
            )

        if agg != "best":
            return [scalar(self._column(agg))]
        lower, upper = directions(key)
        if not lower and not upper:
            self._by_direction(f, lambda col: true())  # the 422 saying so
        whens = []
        if lower:
            whens.append((Run.kind.in_(lower), scalar(MetricLatest.vmin)))
        if upper:
            whens.append((Run.kind.in_(upper), scalar(MetricLatest.vmax)))
        return [case(*whens)]


def result_fields() -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    """``{name: [(result kind, payload path), ...]}`` over the kinds' ``result_fields`` (a name several
    kinds declare matches any of their records)."""
    out: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for manifest in manifests().values():
        for name, target in manifest.result_fields.items():
            record, _, path = target.partition(".")
            entry = (record, tuple(path.split(".")))
            if entry not in out.setdefault(name, []):
                out[name].append(entry)
    return out


class _ResultField(_Kind):
    """``results.<name>``: a value a kind declares in its result records (``result_fields`` of its
    manifest), compared as a spec value is (``_Json``); true when one of the run's records of that kind
    matches. Sorting takes the run's latest such record."""

    what = "a result value"

    def __init__(self) -> None:
        self.json = _Json(Result.payload)

    def _targets(self, f: Field) -> list[tuple[str, Field]]:
        declared = result_fields()
        name = ".".join(f.path)
        if name not in declared:
            known = ", ".join(f"results.{n}" for n in sorted(declared)) or "none"
            raise QueryError(f"no kind declares the result field {name!r}; declared: {known}", f.pos)
        return [(record, Field("results", path, None, f.pos, f.text)) for record, path in declared[name]]

    def _any(self, f: Field, test: Callable[[Field], Bool]) -> Bool:
        return or_(
            *(
                Run.id.in_(select(Result.run_id).where(Result.kind == record, test(inner)))
                for record, inner in self._targets(f)
            )
        )

    def compare(self, f: Field, op: str, value: Literal, pos: int, ctx: Context) -> Bool:
        if op == "!=":
            return and_(self.present(f, ctx), not_(self.compare(f, "=", value, pos, ctx)))
        return self._any(f, lambda inner: self.json.compare(inner, op, value, pos, ctx))

    def is_in(self, f: Field, values: tuple[Literal, ...], pos: int, ctx: Context) -> Bool:
        return self._any(f, lambda inner: self.json.is_in(inner, values, pos, ctx))

    def contains(self, f: Field, value: Literal, pos: int, ctx: Context) -> Bool:
        return self._any(f, lambda inner: self.json.contains(inner, value, pos, ctx))

    def exists(self, f: Field, ctx: Context) -> Bool:
        return self._any(f, lambda inner: self.json.exists(inner, ctx))

    def present(self, f: Field, ctx: Context) -> Bool:
        return self.exists(f, ctx)

    def sort(self, f: Field, ctx: Context) -> list[Any]:
        targets = self._targets(f)
        numbers: list[Any] = []
        strings: list[Any] = []
        for record, inner in targets:
            _, string, number = self.json._parts(inner, ctx)
            latest = (
                select(Result.id)
                .where(Result.run_id == Run.id, Result.kind == record)
                .correlate(Run)
                .order_by(Result.id.desc())
                .limit(1)
                .scalar_subquery()
            )
            for column, out in ((number, numbers), (string, strings)):
                out.append(select(column).where(Result.id == latest).correlate(Run).scalar_subquery())
        return [func.coalesce(*numbers, None), func.coalesce(*strings, None)]


# -- the fields of runs and experiments -------------------------------------------------------------------


def _run_tags(condition: Callable[[Any], Any]) -> Bool:
    return Run.id.in_(select(RunTag.run_id).where(condition(RunTag.tag)))


def _experiment_tags(condition: Callable[[Any], Any]) -> Bool:
    return Experiment.id.in_(select(ExperimentTag.experiment_id).where(condition(ExperimentTag.tag)))


_RUN_AUTHOR = (
    select(User.username)
    .join(Experiment, Experiment.author_id == User.id)
    .where(Experiment.id == Run.experiment_id)
    .correlate(Run)
    .scalar_subquery()
)
_EXPERIMENT_AUTHOR = (
    select(User.username).where(User.id == Experiment.author_id).correlate(Experiment).scalar_subquery()
)
_EXPERIMENT_NAME = (
    select(Experiment.name).where(Experiment.id == Run.experiment_id).correlate(Run).scalar_subquery()
)
_EXPERIMENT_RUNS = (
    select(func.count(Run.id))
    .where(Run.experiment_id == Experiment.id)
    .correlate(Experiment)
    .scalar_subquery()
)


class _ExperimentRef(_Kind):
    """A run's experiment: by id (a number) or by name (a string; ``contains`` on the name)."""

    what = "an experiment id or name"

    def __init__(self) -> None:
        self.by_id = _Column(Run.experiment_id, "a number", False)
        self.by_name = _Column(_EXPERIMENT_NAME, "text", False)

    def _pick(self, value: Literal) -> _Column:
        return self.by_name if isinstance(value, str) else self.by_id

    def compare(self, f: Field, op: str, value: Literal, pos: int, ctx: Context) -> Bool:
        return self._pick(value).compare(f, op, value, pos, ctx)

    def is_in(self, f: Field, values: tuple[Literal, ...], pos: int, ctx: Context) -> Bool:
        return or_(*(self._pick(v).compare(f, "=", v, pos, ctx) for v in values))

    def contains(self, f: Field, value: Literal, pos: int, ctx: Context) -> Bool:
        return self.by_name.contains(f, value, pos, ctx)

    def sort(self, f: Field, ctx: Context) -> list[Any]:
        return [Run.experiment_id]


@dataclass(frozen=True)
class Entity:
    """The fields of one list: ``plain`` fields by name, and the prefixed families (``params``, ``metrics``)."""

    name: str
    plain: dict[str, _Kind]
    families: dict[str, _Kind]
    id_column: Any

    def field_names(self) -> list[str]:
        fam = {
            "params": "params.<path>",
            "metrics": "metrics.<key>",
            "results": "results.<name>",
            "data": "data.<path>",
        }
        out = list(self.plain) + [fam[k] for k in self.families]
        if "metrics" in self.families:
            out += ["min(metrics.<key>)", "max(metrics.<key>)", "last(metrics.<key>)", "best(metrics.<key>)"]
        return out

    def kind_of(self, f: Field) -> _Kind:
        if f.path:
            family = self.families.get(f.name)
            if family is not None:
                return family
        elif f.name in self.plain:
            return self.plain[f.name]
        elif f.name in self.families:
            raise QueryError(f"{f.name} needs a path: {f.name}.<...>", f.pos)
        raise QueryError(
            f"unknown field {f.text!r} for {self.name}; the fields are: {', '.join(self.field_names())}",
            f.pos,
        )


RUNS = Entity(
    "runs",
    {
        "id": _Column(Run.id, "a number", False),
        "name": _Column(Run.name, "text", True),
        "kind": _Column(Run.kind, "text", False),
        "status": _Column(Run.status, "text", False, RUN_STATUSES),
        "tags": _Membership(_run_tags),
        "author": _Column(_RUN_AUTHOR, "text", True),
        "created": _Column(Run.created_at, "a time", False),
        "started": _Column(Run.started_at, "a time", True),
        "finished": _Column(Run.finished_at, "a time", True),
        "experiment": _ExperimentRef(),
        # the attempts that count against max_attempts (the current one included): released attempts, handed
        # back at a worker's shutdown, are not among them (``released`` counts those; backend/runs/attempts.py)
        "attempt": _Column(Run.attempt - Run.released, "a number", False),
        "released": _Column(Run.released, "a number", False),
    },
    {"params": _Json(Run.spec), "metrics": _Metric(), "results": _ResultField()},
    Run.id,
)

EXPERIMENTS = Entity(
    "experiments",
    {
        "id": _Column(Experiment.id, "a number", False),
        "name": _Column(Experiment.name, "text", False),
        "kind": _Column(Experiment.kind, "text", False),
        "author": _Column(_EXPERIMENT_AUTHOR, "text", True),
        "created": _Column(Experiment.created_at, "a time", False),
        "tags": _Membership(_experiment_tags),
        "runs": _Column(_EXPERIMENT_RUNS, "a number", False),
    },
    {"params": _Json(Experiment.spec)},
    Experiment.id,
)


# the rows of one run's per-example table (backend/examples): ``data.<path>`` is a field of the row as the
# kind posted it (``data.correct = false``, ``data.topic contains "sport"``); the list is already scoped
# to one run and table, so only the row's own fields are offered
EXAMPLES = Entity(
    "examples",
    {
        "idx": _Column(RunExample.idx, "a number", False),
        "key": _Column(RunExample.key, "text", False),
    },
    {"data": _Json(RunExample.data)},
    RunExample.idx,
)


def compile_expr(entity: Entity, expr: Expr, ctx: Context) -> Bool:
    if isinstance(expr, And):
        return and_(*(compile_expr(entity, e, ctx) for e in expr.items))
    if isinstance(expr, Or):
        return or_(*(compile_expr(entity, e, ctx) for e in expr.items))
    if isinstance(expr, Not):
        return not_(compile_expr(entity, expr.item, ctx))
    kind = entity.kind_of(expr.field)
    if isinstance(expr, Compare):
        return kind.compare(expr.field, expr.op, expr.value, expr.pos, ctx)
    if isinstance(expr, In):
        test = kind.is_in(expr.field, expr.values, expr.pos, ctx)
        if not expr.negated:
            return test
        return and_(kind.present(expr.field, ctx), not_(test))
    if isinstance(expr, Contains):
        return kind.contains(expr.field, expr.value, expr.pos, ctx)
    test = kind.exists(expr.field, ctx)
    return not_(test) if expr.negated else test


def sort_keys(entity: Entity, f: Field, ctx: Context) -> list[Any]:
    return entity.kind_of(f).sort(f, ctx)


__all__ = [
    "EXAMPLES",
    "EXPERIMENTS",
    "RUNS",
    "Context",
    "Entity",
    "compile_expr",
    "directions",
    "result_fields",
    "sort_keys",
]
