"""The query language of runs and experiments: one grammar for the API's ``q`` and ``sort``,
the CLI's ``--where``, the dashboard's search boxes, saved views and reports. docs/api.md, "Query
language", is the user's reference.

Public interface (everything else in the package is private):

- ``parse(text) -> Expr`` / ``parse_field(text) -> Field``: the typed syntax tree (``backend.query.nodes``).
- ``where(entity, text, dialect, now=None) -> ColumnElement[bool]``: a filter to add to a ``select`` of
  ``Run`` (``entity=RUNS``) or ``Experiment`` (``EXPERIMENTS``), every value a bound parameter. It never
  widens a query: add it to a statement already scoped to the caller's projects.
- ``order(entity, text, desc, dialect) -> list``: ORDER BY clauses for a sort field (``name``,
  ``params.lr``, ``max(metrics.acc)``), rows without a value last in both directions, the id last.
- ``sort_index_sql(entity, text, desc) -> str``: Postgres DDL of an optional index that serves a page
  sorted by ``text`` (a ``params.<path>``) in index order; ``sort_index_name`` its name (a hash of the path).
  ``filter_index_sql(entity, text, "num" | "str")`` / ``filter_index_name``: the same for a filter on the
  path comparing with numbers or strings. backend/query/autoindex.py creates both on first use.
- ``metric_sort(text) -> (key, column) | None``: a metric sort a page can serve from the
  ``metric_latest (key, value)`` index (keyset; backend/runs/repository.py ``page_by_metric``).
- ``box_query(text) -> str | None``: what a page's search box asks for (plain words are a name search;
  ``#7`` is ``id = 7``), as the dashboard and the SDK read a saved view's query.
- ``QueryError`` (``.pos``: 0-based offset or None, ``.message``) and ``invalid(exc, param)``: the API's
  422 for it (``loc: ["query", param]``).
- ``RUNS``, ``EXPERIMENTS``, ``EXAMPLES`` (a run's per-example rows: ``idx``, ``key``, ``data.<path>``): the
  entities; ``entity.field_names()`` lists their fields.
- ``group_field(entity, text, dialect) -> GroupField`` and ``metric_column(entity, text, dialect) ->
  MetricColumn``: a field as GROUP BY columns and a metric column to aggregate (``backend.query.groups``;
  seed groups).

The language: ``field op value`` tests (``= != < <= > >=``, ``in (v, ...)``, ``not in (...)``,
``contains v``, postfix ``exists`` / ``missing``) joined by ``not`` > ``and`` > ``or`` (that precedence)
and parentheses. Values: 'single' or "double" quoted strings, numbers, true / false, dates
``2026-11-01`` (a whole UTC day: ``created = 2026-11-01`` is that day, ``created > 2026-11-01`` after
it), datetimes ``2026-11-01T10:00Z`` (UTC without an offset), ``now`` and ``now - <duration>``
(``90s``, ``15m``, ``2h``, ``3d``, ``1w``): ``created > now - 2d`` is "created in the last two days"; a
duration is only ever subtracted from ``now``. Fields: see ``RUNS`` / ``EXPERIMENTS`` and the docs;
``params.<a.b.c>`` is a path in the spec; ``metrics.<key>`` takes the whole rest as the key (``/``, ``.``,
``-`` included; quote anything else: ``metrics."eval acc"``), the latest value, or ``min(...)``,
``max(...)`` (over the finite values), ``last(...)``, ``best(...)`` (min or max by the kind's declared
``metric_directions``); ``results.<name>`` a result value a kind declares (its manifest's ``result_fields``).
A test on a field a row lacks is false (``!=`` too); ``missing`` finds those rows.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from typing import Any

from sqlalchemy.dialects import postgresql
from sqlalchemy.sql.elements import ColumnElement, Grouping

from backend.db import utcnow
from backend.errors import Invalid
from backend.models import MetricLatest
from backend.query import cost
from backend.query.compiler import (
    EXAMPLES,
    EXPERIMENTS,
    RUNS,
    Context,
    Entity,
    compile_expr,
    directions,
    result_fields,
    sort_keys,
)
from backend.query.groups import GroupField, MetricColumn, group_field, metric_column
from backend.query.nodes import Expr, Field
from backend.query.parser import QueryError, parse, parse_field

# A page's search box (runs, experiments): text without any operator, quote, parenthesis or keyword is a name search
# (frontend/src/lib/runsQuery.ts effectiveQuery, sdk/reasonlab_sdk/views.py effective_query: the same rule).
_BOX_OPERATOR = re.compile(
    r"""[=<>!()"']|\b(and|or|not|in|contains|exists|missing)\b""", re.IGNORECASE | re.ASCII
)
_BOX_ID = re.compile(r"(#?)([0-9]{1,15})")


def box_query(text: str) -> str | None:
    """The expression a page's search box asks for (None: no filter)."""
    t = text.strip()
    if not t:
        return None
    if _BOX_OPERATOR.search(t):
        return t
    named = f"name contains {json.dumps(t, ensure_ascii=False)}"
    m = _BOX_ID.fullmatch(t)
    if m:
        return f"id = {m[2]}" if m[1] else f"id = {m[2]} or {named}"
    return named


def where(entity: Entity, text: str, dialect: str, now: datetime | None = None) -> ColumnElement[bool]:
    """``text`` as a filter on ``entity``'s rows; QueryError if it does not parse, names a bad field or
    costs more than ``cost`` allows."""
    expr = parse(text)
    cost.check(expr)
    return compile_expr(entity, expr, Context(dialect, now or utcnow()))


def order(entity: Entity, text: str, desc: bool, dialect: str) -> list[Any]:
    """ORDER BY clauses for the sort field ``text``: its values (a params path: numbers, then strings),
    rows without one last in both directions, then the id (ascending) so pages are stable."""
    keys = sort_keys(entity, parse_field(text), Context(dialect, utcnow()))
    out: list[Any] = []
    for key in keys:
        out += [key.is_(None).asc(), key.desc() if desc else key.asc()]
    return [*out, entity.id_column.asc()]


def sort_index_sql(entity: Entity, text: str, desc: bool) -> str:
    """Postgres DDL for an index a page of ``entity`` sorted by ``text`` (``params.lr``) can read in order:
    (project_id, exactly the ORDER BY expressions of ``order``), so the planner walks a project's rows in
    sort order and stops at a full page instead of sorting every matching row (a ``params.<path>`` sort at
    1,000,000 runs: ~0.9 s -> ~20 ms, docs/benchmarks.md). Optional, one per path and direction a team
    sorts by often (an index costs writes and space); without it the same query sorts. Not for metric
    sorts (``metric_sort`` has its index). ``CONCURRENTLY``: builds without blocking writes."""
    if metric_sort(text) is not None:
        raise QueryError(f"{text} is served by the metric_latest index already", None)
    table = entity.id_column.table
    # ``order``'s clauses, each expression in parentheses (an index expression needs them)
    clauses: list[Any] = []
    for key in sort_keys(entity, parse_field(text), Context("postgresql", utcnow())):
        clauses += [Grouping(key.is_(None)).asc(), Grouping(key).desc() if desc else Grouping(key).asc()]
    clauses.append(entity.id_column.asc())
    name = sort_index_name(entity, text, desc)
    # each expression compiled as CREATE INDEX compiles them (values inline, columns unqualified), not an
    # Index object: that would attach itself to the ORM's table (create_all and autogenerate would see it)
    dialect = postgresql.dialect()
    parts = [
        str(c.compile(dialect=dialect, compile_kwargs={"literal_binds": True, "include_table": False}))
        for c in (table.c.project_id, *clauses)
    ]
    return f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table.name} ({', '.join(parts)})"


def sort_index_name(entity: Entity, text: str, desc: bool, _variant: tuple[str, str] | None = None) -> str:
    """The name of ``sort_index_sql``'s index: ``ix_<table>_sort_<the path, letters and digits, cut>_
    <10 hex digits of the SHA-256 of the table, the path's parts and the direction>_<asc|desc>``. The hash
    tells apart paths the readable part merges (``params.a_b`` and ``params.a.b``, long paths) and is
    all the name takes from the path besides ``[a-z0-9_]``: never a quote or anything SQL reads."""
    f = parse_field(text)
    if f.name != "params" or not f.path:
        raise QueryError(f"{f.text}: only a params.<path> sort has an optional index", f.pos)
    table = entity.id_column.table.name
    what, direction = _variant or ("sort", "desc" if desc else "asc")
    key = [table, list(f.path), direction] if what == "sort" else [table, list(f.path), what, direction]
    digest = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:10]
    readable = "_".join(p for p in re.split(r"[^a-z0-9]+", "_".join(f.path).lower()) if p)[:20]
    return f"ix_{table}_{what}_{readable}_{digest}_{direction}".replace("__", "_")


FILTER_KINDS = ("num", "str")  # a filter index's value: the path's number or its string


def filter_index_sql(entity: Entity, text: str, kind: str) -> str:
    """Postgres DDL for an index that serves a filter on the ``params.<path>`` ``text`` comparing with
    numbers (``kind`` ``num``: ``params.lambda = 0.2``, ``< 3``, ``in (1, 2)``) or strings (``str``):
    (project_id, exactly the expression ``where`` compares). The sort index does not serve it well:
    its second column (the value IS NULL) is not constrained by the filter, so a Postgres 15 btree walks
    the whole project's part of the index (all 1,000,000 runs' entries, 40 MB, to find 50,000 runs at
    lambda 0.2: ~60 ms; this one reads ~200 pages: ~4 ms). ``CONCURRENTLY``, ``IF NOT EXISTS``."""
    if kind not in FILTER_KINDS:
        raise QueryError(f"a filter index is on a number or a string, not {kind!r}", None)
    name = filter_index_name(entity, text, kind)
    number, string = sort_keys(entity, parse_field(text), Context("postgresql", utcnow()))
    table = entity.id_column.table
    dialect = postgresql.dialect()
    parts = [
        str(c.compile(dialect=dialect, compile_kwargs={"literal_binds": True, "include_table": False}))
        for c in (table.c.project_id, Grouping(number if kind == "num" else string))
    ]
    return f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table.name} ({', '.join(parts)})"


def filter_index_name(entity: Entity, text: str, kind: str) -> str:
    """``filter_index_sql``'s index name: as ``sort_index_name``, ``filter`` for ``sort``, the kind for
    the direction."""
    return sort_index_name(entity, text, False, _variant=("filter", kind))


def metric_sort(text: str) -> tuple[str, Any] | None:
    """``(key, metric_latest column)`` when the sort field ``text`` is ``metrics.<key>`` or
    ``min|max|last(metrics.<key>)``: a page can then walk ``ix_metric_latest_key_value`` in value order
    (keyset) instead of sorting every run; None for any other field (``best`` included: its column
    depends on each run's kind). QueryError as ``order``."""
    f = parse_field(text)
    if f.name != "metrics" or not f.path or f.aggregate == "best":
        return None
    RUNS.kind_of(f)
    column = {"last": MetricLatest.value, "min": MetricLatest.vmin, "max": MetricLatest.vmax}
    return f.path[0], column[f.aggregate or "last"]


def invalid(exc: QueryError, param: str) -> Invalid:
    """The API's 422 for a query error in the query parameter ``param``."""
    return Invalid(f"{param}: {exc}", [{"loc": ["query", param], "msg": str(exc), "type": "query_syntax"}])


__all__ = [
    "EXAMPLES",
    "EXPERIMENTS",
    "RUNS",
    "Entity",
    "Expr",
    "Field",
    "GroupField",
    "MetricColumn",
    "QueryError",
    "directions",
    "filter_index_name",
    "filter_index_sql",
    "group_field",
    "invalid",
    "metric_column",
    "metric_sort",
    "order",
    "parse",
    "parse_field",
    "result_fields",
    "sort_index_name",
    "sort_index_sql",
    "where",
]
