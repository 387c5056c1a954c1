"""Seed groups: ``GET /runs?group_by=...&metrics=...`` answered by one grouped query.

The filtered runs (the caller's projects, experiment, status, kind, tag and ``q``: the statement the runs
list builds) become a subquery of one row per run: its id, the group fields' columns (the query language's
fields, backend/query/groups.py; ``default`` is ``runs.group_key``, every spec field except ``seed``) and
each metric column's value (NULL when the run has none or it is not finite). The grouped query over it
returns, per group, COUNT, MIN(id), and per metric COUNT, SUM(x), SUM(x*x), MIN, MAX: sorted and paged in
the database (LIMIT/OFFSET over groups), so no run row is fetched. The first 100 ids of each group of the
page come from the same query on Postgres when a ``q`` filters the runs (``array_agg`` in id order: the
filter runs once), else from a second query that numbers the page's groups' members (ROW_NUMBER over the
group); for ``default`` a last query reads the spec of each group's first member for its key.

``default`` over whole projects (``whole``: no filter but the projects) is answered from the projects'
stored summaries of their ended runs when they are valid (backend/groups/summary.py), else by this SQL,
which queues the summaries' build when it was slow.

Statistics (``stats``): mean = sum / n; the sample variance from the sums, (sum(x^2) - sum^2 / n) / (n - 1)
(the same arithmetic on SQLite and Postgres; clamped at 0, and 0 when min = max); the 95% interval
mean +- t(0.975, n - 1) * std / sqrt(n), t from scipy.special.stdtrit (Student's t inverse, what scipy.stats'
t.ppf calls: importing scipy.stats cost every API process ~1.3 s of CPU at start; scipy.special itself is
imported at the first interval, not at the API's start: another 0.4 s); std and the interval null
below two values.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select, and_, func, or_, select
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.orm import Session, aliased

from backend import query
from backend.errors import Invalid
from backend.groups import summary
from backend.groups.key import without_seed
from backend.groups.schemas import MEMBERS, RunGroup
from backend.groups.stats import stats
from backend.models import MetricLatest, Run, spec_as_written

MAX_FIELDS = 20
MAX_METRICS = 20
_CHUNK = 200  # groups per members query (SQLite's expression depth bounds an OR of groups)


def split(text: str) -> list[str]:
    """A comma-separated list of fields: commas inside quotes or parentheses do not split."""
    parts: list[str] = []
    depth = 0
    quote: str | None = None
    current = ""
    escaped = False
    for ch in text:
        if quote is not None:
            current += ch
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        current += ch
    parts.append(current.strip())
    return [p for p in parts if p]


def _bad(param: str, msg: str) -> Invalid:
    return Invalid(f"{param}: {msg}", [{"loc": ["query", param], "msg": msg, "type": "group_by"}])


def page(
    session: Session,
    stmt: Select[Any],
    group_by: str,
    metrics: str | None,
    sort: str,
    desc: bool,
    offset: int,
    limit: int,
    queried: bool = False,
    whole: Sequence[int] | None = None,
    settings: Any = None,
) -> tuple[list[RunGroup], bool]:
    """A page of the groups of ``stmt``'s runs and whether more follow; Invalid (422) naming the
    parameter for an unknown or ungroupable field, a non-metric column or an unknown sort.

    ``queried``: ``stmt`` holds a query-language filter (``q``). On Postgres the page's member ids are
    then aggregated in the grouped query's own pass over the runs (``array_agg`` in id order), since
    filtering the runs a second time costs as much as the aggregates (a spec path, a metric threshold:
    CARMA at lambda 0.2, 50,000 runs: ~380 -> ~280 ms under load 6). Without one, a second query numbers
    the members of the page's groups only: an ordered aggregate must sort every run by group where the
    grouped query otherwise hashes them (the whole project, 1,000,000 runs: 2.0 s, 2.3 s in one pass)."""
    dialect = session.get_bind().dialect.name
    names = split(group_by)
    if not names:
        raise _bad("group_by", "group_by needs a field, or default (every spec field except seed)")
    if len(names) > MAX_FIELDS:
        raise _bad("group_by", f"at most {MAX_FIELDS} group fields")
    default = names == ["default"]
    if "default" in names and not default:
        raise _bad("group_by", "default (every spec field except seed) groups alone")
    fields: list[query.GroupField] = []
    if not default:
        try:
            fields = [query.group_field(query.RUNS, name, dialect) for name in dict.fromkeys(names)]
        except query.QueryError as exc:
            raise query.invalid(exc, "group_by") from None
    columns = list(dict.fromkeys(split(metrics or "")))
    if len(columns) > MAX_METRICS:
        raise _bad("metrics", f"at most {MAX_METRICS} metric columns")
    try:
        metric_columns = [query.metric_column(query.RUNS, c, dialect) for c in columns]
    except query.QueryError as exc:
        raise query.invalid(exc, "metrics") from None

    group_exprs = [Run.group_key] if default else [c for f in fields for c in f.columns]
    joined = stmt
    values: list[Any] = []
    # one outer join of metric_latest per metric key (not per column: ``metrics.acc`` and ``max(metrics.acc)``
    # read one row), a hash join, not a subquery per run
    latest_of: dict[str, Any] = {}
    for metric in metric_columns:
        latest = latest_of.get(metric.key)
        if latest is None:
            latest = latest_of[metric.key] = aliased(MetricLatest, name=f"ml{len(latest_of)}")
            joined = joined.outerjoin(latest, and_(latest.run_id == Run.id, latest.key == metric.key))
        values.append(metric.pick(latest, Run.kind))
    inner = joined.with_only_columns(
        Run.id.label("rid"),
        *(c.label(f"g{i}") for i, c in enumerate(group_exprs)),
        *(v.label(f"m{j}") for j, v in enumerate(values)),
    ).subquery()
    gcols = [inner.c[f"g{i}"] for i in range(len(group_exprs))]
    first = func.min(inner.c.rid)
    count = func.count()
    aggregates: list[Any] = [count, first]
    for j in range(len(values)):
        x = inner.c[f"m{j}"]
        aggregates += [func.count(x), func.sum(x), func.sum(x * x), func.min(x), func.max(x)]
    # Postgres with a query: each group's first MEMBERS ids in the same pass over the runs (``queried``)
    in_pass = queried and dialect == "postgresql"
    if in_pass:
        ids = func.array_agg(aggregate_order_by(inner.c.rid, inner.c.rid.asc()))
        aggregates.append(ids[1:MEMBERS])

    by: list[Any]
    if sort in ("created_at", "id"):
        by = [first]
    elif sort == "n":
        by = [count]
    elif sort.startswith("metric-mean:"):
        column = sort.removeprefix("metric-mean:").strip()
        if column not in columns:
            raise _bad(
                "sort", f"metric-mean:{column} is not one of the metrics columns ({', '.join(columns)})"
            )
        by = [func.avg(inner.c[f"m{columns.index(column)}"])]
    elif not default and sort.strip() in [f.text for f in fields]:
        base = 0
        for f in fields:
            if f.text == sort.strip():
                by = f.order(gcols[base : base + len(f.columns)])
                break
            base += len(f.columns)
    elif default and sort == "default":
        by = [gcols[0]]
    else:
        fields_text = ", ".join(["default"] if default else [f.text for f in fields])
        raise _bad(
            "sort",
            f"with group_by, sort takes a group field ({fields_text}), n, metric-mean:<column> or created_at;"
            f" not {sort!r}",
        )
    # the whole project(s), no other filter: from the stored summaries when they are valid (summary.py)
    use_summary = default and whole is not None and settings is not None
    if use_summary:
        assert whole is not None
        found = summary.answer(session, stmt, whole, metric_columns, sort, desc, offset, limit, settings)
        if found is not None:
            if found.rebuild:
                summary.summarizer.submit(settings, whole)
            return found.groups, found.more
    started = time.perf_counter()
    ordering: list[Any] = []
    for key in by:
        ordering += [key.is_(None).asc(), key.desc() if desc else key.asc()]
    grouped = (
        select(*gcols, *aggregates)
        .group_by(*gcols)
        .order_by(*ordering, first.asc())
        .offset(offset)
        .limit(limit + 1)
    )
    rows = session.execute(grouped).all()
    more = len(rows) > limit
    rows = rows[:limit]
    k = len(gcols)
    keys = [tuple(row[:k]) for row in rows]
    if in_pass:
        members = {key: [int(i) for i in row[-1]] for key, row in zip(keys, rows, strict=True)}
    else:
        members = _members(session, stmt, group_exprs, keys, default)
    specs: dict[int, dict[str, Any]] = {}
    if default and rows:
        firsts = [row[k + 1] for row in rows]
        written = session.execute(select(Run.id, Run.spec, Run.spec_text).where(Run.id.in_(firsts))).tuples()
        specs = {i: spec_as_written(spec, text) for i, spec, text in written}
    out: list[RunGroup] = []
    for row, group in zip(rows, keys, strict=True):
        if default:
            key = without_seed(specs.get(row[k + 1]) or {})
        else:
            key = {}
            base = 0
            for f in fields:
                key[f.text] = f.decode(group[base : base + len(f.columns)])
                base += len(f.columns)
        metric_stats = {}
        for j, column in enumerate(columns):
            n, total, squares, low, high = row[k + 2 + 5 * j : k + 7 + 5 * j]
            metric_stats[column] = stats(int(n), _float(total), _float(squares), _float(low), _float(high))
        out.append(RunGroup(key=key, n=int(row[k]), run_ids=members.get(group, []), metrics=metric_stats))
    if use_summary and (time.perf_counter() - started) * 1000 >= settings.group_summary_after_ms:
        assert whole is not None
        summary.summarizer.submit(settings, whole)  # built in the background for the next request
    return out, more


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _members(
    session: Session,
    stmt: Select[Any],
    group_exprs: list[Any],
    keys: Sequence[tuple[Any, ...]],
    default: bool,
) -> dict[tuple[Any, ...], list[int]]:
    """The first ``MEMBERS`` run ids of each group of ``keys``, ascending: the filtered runs' group
    columns computed once per run (a MATERIALIZED CTE: matching them against the page's keys must not
    recompute a JSON extraction per key), narrowed by the first column's values, numbered per group."""
    out: dict[tuple[Any, ...], list[int]] = {}
    if not keys:
        return out
    if default:  # one column, indexed with the project: nothing to compute per run
        wanted = [key[0] for key in keys if key[0] is not None]
        match: Any = Run.group_key.in_(wanted)
        if len(wanted) < len(keys):
            match = or_(match, Run.group_key.is_(None))
        rank = func.row_number().over(partition_by=Run.group_key, order_by=Run.id).label("rn")
        ranked = (
            stmt.with_only_columns(Run.id.label("rid"), Run.group_key.label("g0"), rank)
            .where(match)
            .subquery()
        )
        query_ = select(ranked.c.rid, ranked.c.g0).where(ranked.c.rn <= MEMBERS).order_by(ranked.c.rid)
        for rid, g in session.execute(query_):
            out.setdefault((g,), []).append(int(rid))
        return out
    per_run = (
        stmt.with_only_columns(Run.id.label("rid"), *(c.label(f"g{i}") for i, c in enumerate(group_exprs)))
        .cte("per_run")
        .prefix_with("MATERIALIZED")
    )
    gcols = [per_run.c[f"g{i}"] for i in range(len(group_exprs))]
    for start in range(0, len(keys), _CHUNK):
        chunk = keys[start : start + _CHUNK]
        firsts = {key[0] for key in chunk}
        narrow: Any = gcols[0].in_([v for v in firsts if v is not None])
        if None in firsts:
            narrow = or_(narrow, gcols[0].is_(None))
        match = or_(
            *(and_(*(c.is_not_distinct_from(v) for c, v in zip(gcols, key, strict=True))) for key in chunk)
        )
        number = func.row_number().over(partition_by=gcols, order_by=per_run.c.rid).label("rn")
        numbered = select(per_run.c.rid, *gcols, number).where(narrow, match).subquery()
        ncols = [numbered.c[f"g{i}"] for i in range(len(gcols))]
        rows = session.execute(
            select(numbered.c.rid, *ncols).where(numbered.c.rn <= MEMBERS).order_by(numbered.c.rid)
        ).all()
        for row in rows:
            out.setdefault(tuple(row[1:]), []).append(int(row[0]))
    return out
