"""The query language's fields as GROUP BY columns and as per-run metric values (issue 25: seed groups,
``GET /runs?group_by=&metrics=``; the grouped query itself is backend/runs/groups.py).

A group field compiles to one or more SQL columns over ``Run`` (``columns``) and a ``decode`` that turns
their values in a result row back into the field's value for the group's key:

- plain fields (``status``, ``kind``, ``name``, ``created``, ``experiment`` (its id), ...): the column;
- ``params.<path>``: the JSON type, its text and its number, and the JSON text of an object or array, so
  ``4``, ``"4"`` and ``true`` are three groups on both databases; a JSON null and an absent path are one
  group (value None). A number comes back as an int when it is integral;
- ``metrics.<key>`` (and its aggregates), ``results.<name>``: their sort values.

Tags (a set) cannot be grouped by. ``metric_value`` is a run's value of a metric column (``metrics.acc``,
``max(metrics.acc)``, ``best(metrics.loss)``): NULL when the run has none or its value is not finite
(the metric tables store non-finite values as NULL), so SQL's COUNT/SUM/MIN/MAX skip it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import String, case, func, literal

from backend.db import utcnow
from backend.query.compiler import Context, Entity, _Json, _Kind, _Membership, sort_keys
from backend.query.nodes import Field
from backend.query.parser import QueryError, parse_field


@dataclass(frozen=True)
class GroupField:
    """One group field: ``text`` as the user wrote it, its SQL ``columns`` (over the entity's rows) and
    ``decode`` (their values in a row -> the key's value)."""

    text: str
    columns: list[Any]
    decode: Callable[[Sequence[Any]], Any]
    # the columns to ORDER BY (a subset of ``columns``, by index), numbers before strings for params
    order: list[int]


def _json_columns(kind: _Json, f: Field, ctx: Context) -> GroupField:
    typeof, string, number = kind._parts(f, ctx)
    if ctx.dialect == "postgresql":
        raw = func.json_extract_path_text(kind.column, *[literal(p, String) for p in f.path])
    else:
        path = literal("$" + "".join('."' + p.replace('"', '""') + '"' for p in f.path), String)
        raw = func.json_extract(kind.column, path)
    structured = case((typeof.in_(["object", "array"]), raw))
    group_type = case((typeof != "null", typeof))  # a JSON null and a missing path: one group

    def decode(values: Sequence[Any]) -> Any:
        t, s, n, r = values
        if t == "number" and n is not None:
            x = float(n)
            return int(x) if x.is_integer() and abs(x) < 2**53 else x
        if t == "string":
            return s
        if t in ("true", "false"):
            return t == "true"
        if t in ("object", "array") and r is not None:
            return json.loads(r)
        return None

    return GroupField(f.text, [group_type, string, number, structured], decode, [2, 1, 0])


def group_field(entity: Entity, text: str, dialect: str) -> GroupField:
    """The group field ``text`` (a field of the query language); QueryError for an unknown field or one
    that cannot be grouped by (tags)."""
    f = parse_field(text.strip())
    kind = entity.kind_of(f)
    ctx = Context(dialect, utcnow())
    if isinstance(kind, _Json):
        return _json_columns(kind, f, ctx)
    if isinstance(kind, _Membership) or type(kind).sort is _Kind.sort:
        raise QueryError(f"{f.text} cannot be grouped by ({kind.what})", f.pos)
    columns = sort_keys(entity, f, ctx)

    def first(values: Sequence[Any]) -> Any:
        return next((v for v in values if v is not None), None)

    return GroupField(f.text, columns, first, list(range(len(columns))))


def metric_value(entity: Entity, text: str, dialect: str) -> Any:
    """A run's value of the metric column ``text`` (``metrics.<key>`` with any aggregate) as a correlated
    scalar (NULL: none, or not finite); QueryError for a field that is not a metric."""
    f = parse_field(text.strip())
    if f.name != "metrics" or not f.path:
        raise QueryError(
            f"{f.text} is not a metric column: use metrics.<key>, min(...), max(...), last(...) or best(...)",
            f.pos,
        )
    entity.kind_of(f)
    (column,) = sort_keys(entity, f, Context(dialect, utcnow()))
    return column


__all__ = ["GroupField", "group_field", "metric_value"]
