"""The whole project's seed groups from a stored summary of its ended runs.

``GET /runs?project=P&group_by=default&metrics=...`` with no other filter must aggregate every run of the
project (1,000,000 runs and ~2,000,000 metric_latest rows: ~1.75 s per request, docs/benchmarks.md). Most
of those runs have ended and no longer change, so a project's *summary* keeps their sums once:

- ``group_summary_groups``: per group key, the ended runs' count and smallest id;
- ``group_summary_metrics``: per group key, kind and metric key, the count, sum, sum of squares, min and
  max of the finite ``value``, ``vmin`` and ``vmax`` of their metric_latest rows (``last``, ``min`` and
  ``max`` columns read one of the three; ``best`` reads vmin or vmax per kind by the kind's direction, as
  ``backend.query.metric_column``'s ``pick`` does, so a direction changed in a manifest applies at once);
- ``group_summaries``: the project's state: ``until`` (the summary covers the runs whose status is
  succeeded, failed or cancelled and whose finished_at <= until: *settled*), the build's number, when it
  was built, the runs it covers, and ``generation`` / ``built_generation``.

``answer`` serves such a request when every project of it has a valid summary: the summary's rows, plus
the grouped query of backend/groups/service.py run over the project's *open* runs only (not ended, or ended
after ``until``: ``ix_runs_project_open`` and ``ix_runs_project_finished``), merged here (counts and sums
add, min/max combine, the first id is the smaller), sorted and paged as the SQL path sorts, and each
group's first 100 members read through ``ix_runs_project_group_key`` (project, group key, id). The same
JSON as the SQL path (sums may differ in the last bits: a sum's order of addition differs).

Validity: a summary answers only while ``built_generation = generation``. Triggers on ``runs`` (migration
0024) add 1 to ``generation`` in the transaction of an insert, a delete, or an update of status,
finished_at, project, group key or kind of a run that is or was ended at or before ``watch_until``
(a retry, a deleted experiment, any SQL); ``metric_written`` does it for a metric written to a run that is
not running (a notebook writing to a finished run; never in the running runs' ingest). A reader checks
the state again after it read (``_state``): a build or a change in between sends it to the SQL path.

Building (``Summarizer``: one daemon thread per API process): the SQL path answers and queues the build
when it took longer than ``group_summary_after_ms``; a summary that answers is rebuilt behind it when more
than ``group_summary_max_open`` ended runs are outside it or it is older than ``group_summary_max_age_s``.
``build`` (Postgres, under an advisory lock per project, so two API processes never build one project at
once): ``until`` = now - ``group_summary_margin_s`` (a finish, or a metric batch of a run that was running
when its request began, committing late is still not missed); it raises ``watch_until`` to ``until`` and
commits, waits until every transaction running then has ended (their triggers may have read the old
``watch_until``), reads ``generation`` and the sums in one REPEATABLE READ snapshot, then writes the rows
under a new build number with ``built_generation`` = the generation it read: a change committed after the
snapshot has raised ``generation`` past it. On SQLite one write transaction does it all (no other writer
commits meanwhile).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, case, delete, func, insert, literal, or_, select, text, true, union_all, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Session, aliased

from backend.db import get_engine, utcnow
from backend.groups.key import without_seed
from backend.groups.schemas import MEMBERS, RunGroup
from backend.groups.stats import stats
from backend.models import (
    GroupSummary,
    GroupSummaryGroup,
    GroupSummaryMetric,
    MetricLatest,
    Run,
    spec_as_written,
)
from backend.query import MetricColumn, directions
from backend.query.autoindex import wait_idle
from common.runs import FINISHED_STATUSES

log = logging.getLogger(__name__)

LOCK_KEY = 0x52_4C_47_53  # "RLGS": pg_try_advisory_lock(LOCK_KEY, project_id)
WAIT_TRANSACTIONS = 60.0  # seconds a build waits for the transactions running when it raised watch_until
_ENDED_SQL = "('succeeded', 'failed', 'cancelled')"
assert "(" + ", ".join(f"'{s}'" for s in FINISHED_STATUSES) + ")" == _ENDED_SQL


def settled(until: datetime) -> Any:
    """The runs a summary built with ``until`` covers."""
    return and_(Run.status.in_(FINISHED_STATUSES), Run.finished_at.is_not(None), Run.finished_at <= until)


def open_runs(until: datetime) -> Any:
    """The complement of ``settled``: the runs a summary does not cover (the status test spelled as the
    partial index ``ix_runs_project_open`` is, so Postgres can use it)."""
    return or_(text(f"runs.status NOT IN {_ENDED_SQL}"), Run.finished_at.is_(None), Run.finished_at > until)


# --- validity ---------------------------------------------------------------------------------------------
def metric_written(session: Session, run: Run) -> None:
    """A metric was written to ``run``, which is not running: if a summary covers it (or may: its build is
    reading), that summary is no longer exact. Call after the metric writes, in their transaction (so the
    transaction has its id before this reads ``watch_until``: see ``build``)."""
    if run.status == "queued" and run.started_at is None:
        # requests skip the metric lookups of queued runs that never started (``fresh_clean``): whatever
        # the state row says now (a build may be reading), the summary is no longer valid
        session.execute(
            update(GroupSummary)
            .where(GroupSummary.project_id == run.project_id)
            .values(generation=GroupSummary.generation + 1)
        )
        return
    if run.status not in FINISHED_STATUSES or run.finished_at is None:
        return
    session.execute(
        update(GroupSummary)
        .where(GroupSummary.project_id == run.project_id, GroupSummary.watch_until >= run.finished_at)
        .values(generation=GroupSummary.generation + 1)
    )


@dataclass(frozen=True)
class _State:
    project_id: int
    build: int
    generation: int
    until: datetime
    built_at: datetime
    fresh_clean: bool


def _states(session: Session, project_ids: Sequence[int]) -> dict[int, _State] | None:
    """Every project's valid summary, or None when one has none (or a stale one)."""
    rows = session.execute(
        select(
            GroupSummary.project_id,
            GroupSummary.build,
            GroupSummary.generation,
            GroupSummary.built_generation,
            GroupSummary.until,
            GroupSummary.built_at,
            GroupSummary.fresh_clean,
        ).where(GroupSummary.project_id.in_(project_ids))
    ).all()
    out: dict[int, _State] = {}
    for pid, build_no, generation, built, until, built_at, clean in rows:
        if built is None or built != generation or until is None or built_at is None:
            return None
        out[pid] = _State(pid, build_no, generation, until, built_at, bool(clean))
    return out if len(out) == len(set(project_ids)) else None


# --- answering --------------------------------------------------------------------------------------------
@dataclass
class _Stat:
    n: int = 0
    total: float = 0.0
    squares: float = 0.0
    low: float | None = None
    high: float | None = None

    def add(self, n: Any, total: Any, squares: Any, low: Any, high: Any) -> None:
        if not n:
            return
        self.n += int(n)
        self.total += float(total)
        self.squares += float(squares)
        lo, hi = float(low), float(high)
        self.low = lo if self.low is None else min(self.low, lo)
        self.high = hi if self.high is None else max(self.high, hi)


@dataclass
class _Group:
    key: str | None
    n: int = 0
    first: int | None = None
    metrics: list[_Stat] = field(default_factory=list)

    def count(self, n: int, first: int) -> None:
        self.n += n
        self.first = first if self.first is None else min(self.first, first)


def _group(groups: dict[str | None, _Group], key: str | None, width: int) -> _Group:
    group = groups.get(key)
    if group is None:
        group = groups[key] = _Group(key, metrics=[_Stat() for _ in range(width)])
    return group


def _read_summary(
    session: Session, states: dict[int, _State], columns: list[MetricColumn]
) -> dict[str | None, _Group]:
    groups: dict[str | None, _Group] = {}
    width = len(columns)
    for pid, state in states.items():
        for key, n, first in session.execute(
            select(GroupSummaryGroup.group_key, GroupSummaryGroup.n, GroupSummaryGroup.first_id).where(
                GroupSummaryGroup.project_id == pid, GroupSummaryGroup.build == state.build
            )
        ):
            _group(groups, key, width).count(int(n), int(first))
    keys = sorted({c.key for c in columns})
    if not keys:
        return groups
    sides: dict[str, list[tuple[MetricColumn, int, set[str], set[str]]]] = {}
    for j, c in enumerate(columns):
        low_kinds, high_kinds = directions(c.key) if c.aggregate == "best" else ([], [])
        sides.setdefault(c.key, []).append((c, j, set(low_kinds), set(high_kinds)))
    m = GroupSummaryMetric
    stat_cols = [
        m.v_n, m.v_sum, m.v_sq, m.v_min, m.v_max,
        m.lo_n, m.lo_sum, m.lo_sq, m.lo_min, m.lo_max,
        m.hi_n, m.hi_sum, m.hi_sq, m.hi_min, m.hi_max,
    ]  # fmt: skip
    for pid, state in states.items():
        rows = session.execute(
            select(m.group_key, m.kind, m.key, *stat_cols).where(
                m.project_id == pid, m.build == state.build, m.key.in_(keys)
            )
        )
        for row in rows:
            group = _group(groups, row[0], width)
            kind, key = row[1], row[2]
            value: Any = row[3:8]
            low: Any = row[8:13]
            high: Any = row[13:18]
            for c, j, lower, upper in sides[key]:
                part: Any
                if c.aggregate == "last":
                    part = value
                elif c.aggregate == "min":
                    part = low
                elif c.aggregate == "max":
                    part = high
                elif kind in lower:
                    part = low
                elif kind in upper:
                    part = high
                else:
                    continue  # best of a kind without a direction for the key: no value (as ``pick``)
                group.metrics[j].add(*part)
    return groups


def _open_inner(stmt: Any, states: dict[int, _State], columns: list[MetricColumn], dialect: str) -> Any:
    """One row per open run: its id, group key, whether it has ended, each metric column's value.

    Postgres: per project, the runs not ended from ``ix_runs_project_open`` (which holds id, group key and
    kind: an index-only scan, no visit of a million-run table's pages) and those ended after ``until`` from
    ``ix_runs_project_finished``; each run's metric values from one lookup of its metric_latest rows (a
    LATERAL aggregate, one index descent per run instead of one per metric key). SQLite: the runs filter and
    an outer join per key, as backend/groups/service.py does."""
    if dialect != "postgresql":
        open_stmt = stmt.where(
            or_(*(and_(Run.project_id == pid, open_runs(s.until)) for pid, s in states.items()))
        )
        latest_of: dict[str, Any] = {}
        values: list[Any] = []
        for metric in columns:
            latest = latest_of.get(metric.key)
            if latest is None:
                latest = latest_of[metric.key] = aliased(MetricLatest, name=f"ml{len(latest_of)}")
                open_stmt = open_stmt.outerjoin(
                    latest, and_(latest.run_id == Run.id, latest.key == metric.key)
                )
            values.append(metric.pick(latest, Run.kind))
        return open_stmt.with_only_columns(
            Run.id.label("rid"),
            Run.group_key.label("g0"),
            Run.status.in_(FINISHED_STATUSES).label("ended"),
            *(v.label(f"m{j}") for j, v in enumerate(values)),
        ).subquery()
    parts: list[Any] = []
    for pid, state in states.items():
        base: list[Any] = [Run.id.label("rid"), Run.group_key.label("g0"), Run.kind.label("kind")]
        fresh = and_(Run.status == "queued", Run.started_at.is_(None))  # queued, never started
        parts.append(
            select(
                *base, literal(False).label("ended"), (~fresh if state.fresh_clean else true()).label("look")
            ).where(Run.project_id == pid, text(f"runs.status NOT IN {_ENDED_SQL}"))
        )
        parts.append(
            select(*base, literal(True).label("ended"), true().label("look")).where(
                Run.project_id == pid,
                text(f"runs.status IN {_ENDED_SQL}"),
                or_(Run.finished_at.is_(None), Run.finished_at > state.until),
            )
        )
    runs = union_all(*parts).subquery("open_runs")
    if not columns:
        return select(runs.c.rid, runs.c.g0, runs.c.ended).subquery()
    ml = aliased(MetricLatest, name="ml")
    lookup = (
        select(
            *(
                func.max(c.pick(ml, runs.c.kind)).filter(ml.key == c.key).label(f"m{j}")
                for j, c in enumerate(columns)
            )
        )
        # ``look`` false (a queued run that never started, none of which has a metric row): no lookup
        .where(runs.c.look, ml.run_id == runs.c.rid, ml.key.in_(sorted({c.key for c in columns})))
        .lateral("mv")
    )
    return (
        select(runs.c.rid, runs.c.g0, runs.c.ended, *(lookup.c[f"m{j}"] for j in range(len(columns))))
        .select_from(runs.outerjoin(lookup, true()))
        .subquery()
    )


def _read_open(
    session: Session,
    stmt: Any,
    states: dict[int, _State],
    columns: list[MetricColumn],
    groups: dict[str | None, _Group],
) -> int:
    """Add the open runs' groups (the grouped query of backend/groups/service.py over them) to ``groups``;
    returns how many of them have ended (after their summary's ``until``)."""
    inner = _open_inner(stmt, states, columns, session.get_bind().dialect.name)
    aggregates: list[Any] = [func.count(), func.min(inner.c.rid), func.sum(case((inner.c.ended, 1), else_=0))]
    for j in range(len(columns)):
        x = inner.c[f"m{j}"]
        aggregates += [func.count(x), func.sum(x), func.sum(x * x), func.min(x), func.max(x)]
    width = len(columns)
    ended_total = 0
    for row in session.execute(select(inner.c.g0, *aggregates).group_by(inner.c.g0)):
        group = _group(groups, row[0], width)
        group.count(int(row[1]), int(row[2]))
        ended_total += int(row[3] or 0)
        for j in range(width):
            group.metrics[j].add(*row[4 + 5 * j : 9 + 5 * j])
    return ended_total


def _sorted(groups: list[_Group], sort: str, desc: bool, columns: list[MetricColumn]) -> list[_Group]:
    """``groups`` in the SQL path's order: the sort key, rows without one last in both directions, ties by
    the first member's id."""
    out = sorted(groups, key=lambda g: g.first or 0)
    if sort in ("created_at", "id"):

        def value(g: _Group) -> Any:
            return g.first
    elif sort == "n":

        def value(g: _Group) -> Any:
            return g.n
    elif sort.startswith("metric-mean:"):
        j = [c.text for c in columns].index(sort.removeprefix("metric-mean:").strip())

        def value(g: _Group) -> Any:
            s = g.metrics[j]
            return s.total / s.n if s.n else None
    else:  # default: the group key

        def value(g: _Group) -> Any:
            return g.key

    valued = [g for g in out if value(g) is not None]
    valued.sort(key=value, reverse=desc)  # stable, also reversed: ties keep the first id's order
    return valued + [g for g in out if value(g) is None]


def _members(
    session: Session, project_ids: Sequence[int], keys: list[str | None]
) -> dict[str | None, list[int]]:
    """Each group's first ``MEMBERS`` run ids, read in order from (project, group key, id): per project
    (an index scan in id order stops after ``MEMBERS``; one over several projects would sort the groups),
    the projects' lists merged."""
    found: dict[str | None, list[int]] = {}
    if not keys:
        return found
    postgres = session.get_bind().dialect.name == "postgresql"
    named = [k for k in keys if k is not None]
    for pid in sorted(set(project_ids)):
        per_key: list[str | None] = [*([] if postgres else named), *([None] if None in keys else [])]
        if postgres and named:
            rows = session.execute(
                text(
                    "SELECT k.g, r.id FROM unnest(CAST(:keys AS text[])) AS k(g) CROSS JOIN LATERAL "
                    "(SELECT id FROM runs WHERE project_id = :p AND group_key = k.g ORDER BY id LIMIT :n) AS r"
                ),
                {"keys": named, "p": pid, "n": MEMBERS},
            )
            for g, rid in rows:
                found.setdefault(g, []).append(int(rid))
        for key in per_key:
            match = Run.group_key.is_(None) if key is None else Run.group_key == key
            ids = session.scalars(
                select(Run.id).where(Run.project_id == pid, match).order_by(Run.id).limit(MEMBERS)
            )
            found.setdefault(key, []).extend(int(i) for i in ids)
    return {key: sorted(ids)[:MEMBERS] for key, ids in found.items()}


@dataclass
class Answer:
    groups: list[Any]
    more: bool
    rebuild: bool  # the summary answered but should be rebuilt behind it (too many open runs, too old)


def answer(
    session: Session,
    stmt: Any,
    project_ids: Sequence[int],
    columns: list[MetricColumn],
    sort: str,
    desc: bool,
    offset: int,
    limit: int,
    settings: Any,
) -> Answer | None:
    """The page of default groups of the projects' runs from their summaries and open runs, or None when a
    project has no valid summary (or one changed while this read): the caller answers by SQL."""
    states = _states(session, project_ids)
    if states is None:
        return None
    groups = _read_summary(session, states, columns)
    ended_open = _read_open(session, stmt, states, columns, groups)
    if _states(session, project_ids) != states:  # a build or a change while this read
        return None
    ordered = _sorted(list(groups.values()), sort, desc, columns)
    page = ordered[offset : offset + limit + 1]
    more = len(page) > limit
    page = page[:limit]
    members = _members(session, project_ids, [g.key for g in page])
    firsts = [g.first for g in page if g.first is not None]
    specs: dict[int, Any] = {}
    if firsts:
        written = session.execute(select(Run.id, Run.spec, Run.spec_text).where(Run.id.in_(firsts))).tuples()
        specs = {i: spec_as_written(spec, text) for i, spec, text in written}
    out = []
    for g in page:
        metric_stats = {}
        for j, c in enumerate(columns):
            s = g.metrics[j]
            if s.n:
                metric_stats[c.text] = stats(s.n, s.total, s.squares, s.low, s.high)
            else:
                metric_stats[c.text] = stats(0, None, None, None, None)
        key = without_seed(specs.get(g.first or 0) or {})
        out.append(RunGroup(key=key, n=g.n, run_ids=members.get(g.key, []), metrics=metric_stats))
    now = utcnow()
    old = any((now - s.built_at).total_seconds() > settings.group_summary_max_age_s for s in states.values())
    return Answer(out, more, old or ended_open > settings.group_summary_max_open)


# --- building ---------------------------------------------------------------------------------------------
def _fresh_clean(conn: Connection, project_id: int) -> bool:
    """No queued run of the project that never started has a metric row."""
    has = conn.execute(
        select(MetricLatest.run_id)
        .join(Run, Run.id == MetricLatest.run_id)
        .where(Run.project_id == project_id, Run.status == "queued", Run.started_at.is_(None))
        .limit(1)
    ).first()
    return has is None


def _sums(conn: Connection, project_id: int, until: datetime) -> tuple[list[Any], list[Any]]:
    covered = and_(Run.project_id == project_id, settled(until))
    groups = conn.execute(
        select(Run.group_key, func.count(), func.min(Run.id)).where(covered).group_by(Run.group_key)
    ).all()
    m = MetricLatest
    stat: list[Any] = []
    for col in (m.value, m.vmin, m.vmax):
        stat += [func.count(col), func.sum(col), func.sum(col * col), func.min(col), func.max(col)]
    metrics = conn.execute(
        select(Run.group_key, Run.kind, m.key, *stat)
        .join(m, m.run_id == Run.id)
        .where(covered)
        .group_by(Run.group_key, Run.kind, m.key)
    ).all()
    return list(groups), list(metrics)


_METRIC_NAMES = [f"{p}_{s}" for p in ("v", "lo", "hi") for s in ("n", "sum", "sq", "min", "max")]


def _write(
    conn: Connection,
    project_id: int,
    build_no: int,
    generation: int,
    until: datetime,
    groups: list[Any],
    metrics: list[Any],
    fresh_clean: bool,
) -> None:
    if groups:
        conn.execute(
            insert(GroupSummaryGroup),
            [
                {"project_id": project_id, "build": build_no, "group_key": g, "n": int(n), "first_id": int(f)}
                for g, n, f in groups
            ],
        )
    if metrics:
        conn.execute(
            insert(GroupSummaryMetric),
            [
                {
                    "project_id": project_id,
                    "build": build_no,
                    "group_key": row[0],
                    "kind": row[1],
                    "key": row[2],
                    **{name: _num(v) for name, v in zip(_METRIC_NAMES, row[3:], strict=True)},
                }
                for row in metrics
            ],
        )
    conn.execute(
        update(GroupSummary)
        .where(GroupSummary.project_id == project_id)
        .values(
            build=build_no,
            built_generation=generation,
            until=until,
            built_at=utcnow(),
            fresh_clean=fresh_clean,
            covered_runs=sum(int(n) for _, n, _ in groups),
        )
    )


def _num(v: Any) -> Any:
    if v is None:
        return None
    return int(v) if isinstance(v, int) else float(v)


def _ensure_state(conn: Connection, project_id: int) -> None:
    if conn.execute(select(GroupSummary.project_id).where(GroupSummary.project_id == project_id)).first():
        return
    conn.execute(insert(GroupSummary).values(project_id=project_id, generation=0, build=0, covered_runs=0))


def _watch(conn: Connection, project_id: int, until: datetime) -> None:
    conn.execute(
        update(GroupSummary)
        .where(
            GroupSummary.project_id == project_id,
            or_(GroupSummary.watch_until.is_(None), GroupSummary.watch_until < until),
        )
        .values(watch_until=until)
    )


def build(engine: Engine, project_id: int, margin_s: float) -> bool:
    """Build ``project_id``'s summary (see the module's docstring): True when this call built it."""
    until = utcnow() - timedelta(seconds=margin_s)
    started = time.perf_counter()
    if engine.dialect.name != "postgresql":
        with engine.begin() as conn:
            _ensure_state(conn, project_id)  # a write first: this transaction holds SQLite's write lock
            _watch(conn, project_id, until)
            generation, build_no = conn.execute(
                select(GroupSummary.generation, GroupSummary.build).where(
                    GroupSummary.project_id == project_id
                )
            ).one()
            groups, metrics = _sums(conn, project_id, until)
            clean = _fresh_clean(conn, project_id)
            _write(conn, project_id, build_no + 1, generation, until, groups, metrics, clean)
        with engine.begin() as conn:
            _drop_old(conn, project_id, build_no + 1)
        _log(project_id, groups, started)
        return True
    with engine.connect() as lock:
        if not lock.execute(
            text("SELECT pg_try_advisory_lock(:k, :p)"), {"k": LOCK_KEY, "p": project_id}
        ).scalar():
            lock.rollback()
            return False  # another process builds it
        lock.commit()
        try:
            with engine.begin() as conn:  # only a builder inserts it, and this one holds the lock
                _ensure_state(conn, project_id)
            with engine.begin() as conn:
                _watch(conn, project_id, until)
            # every transaction running now may have read the old watch_until in a trigger or hook: wait
            # until they have all ended, so the snapshot below sees what they wrote
            with engine.connect() as conn:
                xmax = conn.execute(text("SELECT pg_snapshot_xmax(pg_current_snapshot())::text")).scalar()
                end = time.monotonic() + WAIT_TRANSACTIONS
                while not conn.execute(
                    text(
                        "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint >= CAST(:x AS bigint)"
                    ),
                    {"x": xmax},
                ).scalar():
                    conn.rollback()
                    if time.monotonic() > end:
                        log.warning(
                            "group summary of project %s: transactions still open; not built", project_id
                        )
                        return False
                    time.sleep(0.05)
            with engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn:
                generation, build_no = conn.execute(
                    select(GroupSummary.generation, GroupSummary.build).where(
                        GroupSummary.project_id == project_id
                    )
                ).one()
                groups, metrics = _sums(conn, project_id, until)
                clean = _fresh_clean(conn, project_id)
                conn.rollback()
            with engine.begin() as conn:
                _write(conn, project_id, build_no + 1, generation, until, groups, metrics, clean)
            with engine.begin() as conn:
                _drop_old(conn, project_id, build_no + 1)
            _log(project_id, groups, started)
            return True
        finally:
            lock.execute(text("SELECT pg_advisory_unlock(:k, :p)"), {"k": LOCK_KEY, "p": project_id})
            lock.commit()


def _drop_old(conn: Connection, project_id: int, build_no: int) -> None:
    """The earlier builds' rows (after the new one is committed: a reader that read the old state finds its
    rows until then, and the state changed when it checks again)."""
    for table in (GroupSummaryGroup, GroupSummaryMetric):
        conn.execute(delete(table).where(table.project_id == project_id, table.build != build_no))


def _log(project_id: int, groups: list[Any], started: float) -> None:
    log.info(
        "group summary of project %s: %d groups, %d runs, built in %.1f s",
        project_id,
        len(groups),
        sum(int(n) for _, n, _ in groups),
        time.perf_counter() - started,
    )


class Summarizer:
    """The builder of one API process: a queue of (database, project) and a daemon thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: queue.Queue[tuple[str, int, float]] = queue.Queue()
        self._pending: set[tuple[str, int]] = set()
        self._thread: threading.Thread | None = None
        self.built: list[tuple[str, int]] = []

    def submit(self, settings: Any, project_ids: Sequence[int]) -> None:
        with self._lock:
            for pid in sorted(set(project_ids)):
                job = (settings.database_url, pid)
                if job in self._pending:
                    continue
                self._pending.add(job)
                self._queue.put((settings.database_url, pid, settings.group_summary_margin_s))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="group-summary", daemon=True)
                self._thread.start()

    def idle(self, timeout: float) -> bool:
        """Wait until no build is pending (tests, benches): True if none is left."""
        return wait_idle(self._lock, self._pending, timeout)

    def _loop(self) -> None:
        while True:
            url, pid, margin = self._queue.get()
            try:
                if build(get_engine(url), pid, margin):
                    self.built.append((url, pid))
            except Exception:  # a dropped test database, a lost connection: the next slow request retries
                log.exception("group summary of project %s", pid)
            finally:
                with self._lock:
                    self._pending.discard((url, pid))


summarizer = Summarizer()
