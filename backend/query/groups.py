"""The query language's fields as GROUP BY columns and as per-run metric values (seed groups,
``GET /runs?group_by=&metrics=``; the grouped query itself is backend/groups/service.py).

A group field compiles to SQL columns over ``Run`` (``columns``, computed once per run), a ``decode`` that
turns their values in a result row back into the field's value for the group's key, and ``order``: the
ORDER BY keys of a group from its grouped columns.

- plain fields (``status``, ``kind``, ``name``, ``created``, ``experiment`` (its id), ...): the column;
- ``params.<path>``: the value's JSON text (one extraction per run; ``->`` on SQLite,
  ``jsonb_extract_path`` on Postgres's jsonb specs), so ``4``, ``"4"`` and ``true`` are three groups; a JSON
  null and a missing path are one group (None). The key is the JSON value as stored in the spec; groups
  sort by number, then string;
- ``metrics.<key>`` (and its aggregates), ``results.<name>``: their sort values.

Tags (a set) cannot be grouped by. ``metric_column`` is a metric column (``metrics.acc``,
``max(metrics.acc)``, ``best(metrics.loss)``): the caller outer-joins ``metric_latest`` on (run, key) and
``pick`` reads the run's value, NULL when it has none or it is not finite (the metric tables store
non-finite values as NULL), so SQL's COUNT/SUM/MIN/MAX skip it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import JSON, Float, String, Text, case, cast, func, literal

from backend.db import utcnow
from backend.query.compiler import Context, Entity, _Json, _Kind, _Membership, directions, sort_keys
from backend.query.nodes import Field
from backend.query.parser import QueryError, parse_field


@dataclass(frozen=True)
class GroupField:
    """One group field: ``text`` as the user wrote it, its SQL ``columns`` (over the entity's rows) and
    ``decode`` (their values in a row -> the key's value)."""

    text: str
    columns: list[Any]
    decode: Callable[[Sequence[Any]], Any]
    # the ORDER BY keys of a group from its grouped columns (params: numbers, then strings, then the rest)
    order: Callable[[list[Any]], list[Any]]


def _json_column(kind: _Json, f: Field, ctx: Context) -> GroupField:
    """One column per row: the value's JSON text at the path (one extraction per run), NULL for a JSON null
    or a missing path; sorted (per group) by number, then string, then the text."""
    if ctx.dialect == "postgresql":
        node = getattr(func, kind.prefix + "_extract_path")(
            kind.column, *[literal(p, String) for p in f.path]
        )
        raw: Any = func.nullif(cast(node, Text), "null")
    else:
        path = literal("$" + "".join('."' + p.replace('"', '""') + '"' for p in f.path), String)
        raw = func.nullif(kind.column.op("->")(path), "null")

    def order(gs: list[Any]) -> list[Any]:
        g = gs[0]
        if ctx.dialect == "postgresql":
            typeof = func.json_typeof(cast(g, JSON))
            return [case((typeof == "number", cast(g, Float))), case((typeof == "string", g)), g]
        typeof = func.json_type(g)
        return [case((typeof.in_(["integer", "real"]), cast(g, Float))), case((typeof == "text", g)), g]

    def decode(values: Sequence[Any]) -> Any:
        return None if values[0] is None else json.loads(values[0])

    return GroupField(f.text, [raw], decode, order)


def group_field(entity: Entity, text: str, dialect: str) -> GroupField:
    """The group field ``text`` (a field of the query language); QueryError for an unknown field or one
    that cannot be grouped by (tags)."""
    f = parse_field(text.strip())
    kind = entity.kind_of(f)
    ctx = Context(dialect, utcnow())
    if isinstance(kind, _Json):
        return _json_column(kind, f, ctx)
    if isinstance(kind, _Membership) or type(kind).sort is _Kind.sort:
        raise QueryError(f"{f.text} cannot be grouped by ({kind.what})", f.pos)
    columns = sort_keys(entity, f, ctx)

    def first(values: Sequence[Any]) -> Any:
        return next((v for v in values if v is not None), None)

    return GroupField(f.text, columns, first, lambda gs: gs)


@dataclass(frozen=True)
class MetricColumn:
    """A metric column: the series ``key`` and ``pick(row, kind)``, the run's value from its
    ``metric_latest`` row of that key (an alias joined by the caller) and the run's kind column."""

    text: str
    key: str
    pick: Callable[[Any, Any], Any]
    aggregate: str = "last"  # last, min, max or best


def metric_column(entity: Entity, text: str, dialect: str) -> MetricColumn:
    """The metric column ``text`` (``metrics.<key>`` with any aggregate); QueryError for a field that is
    not a metric, or ``best`` of a key no kind declares a direction for."""
    f = parse_field(text.strip())
    if f.name != "metrics" or not f.path:
        raise QueryError(
            f"{f.text} is not a metric column: use metrics.<key>, min(...), max(...), last(...) or best(...)",
            f.pos,
        )
    sort_keys(entity, f, Context(dialect, utcnow()))  # the language's checks (best without a direction)
    key = f.path[0]
    agg = f.aggregate or "last"
    if agg != "best":
        name = {"last": "value", "min": "vmin", "max": "vmax"}[agg]
        return MetricColumn(f.text, key, lambda row, kind: getattr(row, name), agg)
    lower, upper = directions(key)

    def best(row: Any, kind: Any) -> Any:
        whens = []
        if lower:
            whens.append((kind.in_(lower), row.vmin))
        if upper:
            whens.append((kind.in_(upper), row.vmax))
        return case(*whens)

    return MetricColumn(f.text, key, best, "best")


__all__ = ["GroupField", "MetricColumn", "group_field", "metric_column"]
