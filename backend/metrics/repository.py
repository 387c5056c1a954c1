"""Metric storage and the downsampling query.

Points are upserted on (run, key, step), so a resumed run or a re-sent batch overwrites instead of
duplicating. Downsampling is one SQL statement per key: equal step-range buckets with min, max, count
and the value at the bucket's last step, so a spike survives in ``max`` whatever the zoom.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg
from sqlalchemy import func, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from backend.models import Metric, MetricLatest

# ``last`` is looked up per bucket through the primary key (a correlated subquery: one index probe per
# bucket, on Postgres and SQLite alike). A plain join back to ``metric`` let the planner, which cannot
# estimate the number of buckets, hash the whole series: ~270 ms for a 1,000,000-point key even when
# the buckets cover 1% of it (bench/metric_query.py).
_BUCKETS_SQL = """
    WITH pts AS (
        SELECT step, value, (step - :lo) / :width AS bucket
        FROM metric
        WHERE run_id = :run_id AND key = :key AND step >= :lo AND step <= :hi
    ),
    agg AS (
        SELECT bucket, MIN(step) AS s0, MAX(step) AS s1, MIN(value) AS vmin, MAX(value) AS vmax, COUNT(*) AS n
        FROM pts GROUP BY bucket
    )
    SELECT agg.s0, agg.s1, agg.vmin, agg.vmax,
        (SELECT m.value FROM metric m WHERE m.run_id = :run_id AND m.key = :key AND m.step = agg.s1) AS vlast,
        agg.n{time}
    FROM agg
    ORDER BY agg.bucket
    """
_BUCKETS = text(_BUCKETS_SQL.format(time=""))
# the same with the time of each bucket's last point (a chart over wall-clock time): one more probe per
# bucket, so only when asked
_BUCKETS_TIMED = text(
    _BUCKETS_SQL.format(
        time=",\n        (SELECT m.time FROM metric m WHERE m.run_id = :run_id AND m.key = :key AND m.step = agg.s1)"
    )
)


# Postgres ingest. The common case, a training loop logging new steps, is one binary COPY straight into
# ``metric`` (inside a savepoint). A batch that may overwrite stored points (a retry, a resumed run:
# some key's first step is not after its stored latest step), or whose COPY meets an existing point (a
# concurrent writer of the same steps), goes by COPY into a session-local staging table and one INSERT
# ... SELECT ... ON CONFLICT DO UPDATE. Either way the run's existence is checked once per statement by
# a trigger (migration 0003), not once per point by a foreign key (bench/metric_ingest.py,
# docs/benchmarks.md: COPY straight in is ~2x faster than staging + merge, the per-point foreign key
# check was ~40% of the merge). The merge replaced an executemany of one INSERT per row (~40 us of API
# CPU per point); one INSERT over unnest(arrays) was slower (psycopg's text dumping of lists).
_PG_COLUMNS = "(run_id, key, step, value, time)"
_PG_TYPES = ["int4", "varchar", "int8", "float8", "timestamptz"]
_PG_STAGE = """
    CREATE TEMPORARY TABLE IF NOT EXISTS metric_stage (
        run_id integer, key varchar(250), step bigint, value double precision, time timestamptz
    ) ON COMMIT DELETE ROWS
"""
_PG_MERGE = """
    INSERT INTO metric (run_id, key, step, value, time)
    SELECT run_id, key, step, value, time FROM metric_stage ORDER BY key, step
    ON CONFLICT (run_id, key, step) DO UPDATE SET value = excluded.value, time = excluded.time
"""

Row = tuple[int, str, int, float | None, datetime]


def _utc(t: datetime) -> datetime:
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def _raw(session: Session) -> psycopg.Connection[Any]:
    """The session's psycopg connection, in the session's transaction."""
    raw = session.connection().connection.driver_connection
    assert isinstance(raw, psycopg.Connection)
    return raw


def _copy(cur: psycopg.Cursor[Any], table: str, rows: Sequence[Row]) -> None:
    with cur.copy(f"COPY {table} {_PG_COLUMNS} FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(_PG_TYPES)
        for row in rows:
            copy.write_row(row)


def _append(session: Session, rows: Sequence[Row]) -> bool:
    """COPY ``rows`` straight into ``metric``; False, with nothing written, if one of them exists (or a
    concurrent writer of the same points, in another order, deadlocked with this one)."""
    with _raw(session).cursor() as cur:
        cur.execute("SAVEPOINT metric_append")
        try:
            _copy(cur, "metric", rows)
        except (psycopg.errors.UniqueViolation, psycopg.errors.DeadlockDetected):
            cur.execute("ROLLBACK TO SAVEPOINT metric_append")
            return False
        cur.execute("RELEASE SAVEPOINT metric_append")
    return True


def _merge(session: Session, rows: Sequence[Row]) -> None:
    """Upsert ``rows`` (unique on run, key, step) through the staging table, in key order: concurrent
    merges of overlapping batches lock their common points in one order."""
    with _raw(session).cursor() as cur:
        cur.execute(_PG_STAGE)
        cur.execute("DELETE FROM metric_stage")  # an earlier upsert of this transaction
        _copy(cur, "metric_stage", rows)
        cur.execute(_PG_MERGE)


def _may_overwrite(session: Session, run_id: int, first_steps: Mapping[str, int]) -> bool:
    """True if a key's first step in the batch is not after the key's latest stored step."""
    stored = latest_steps(session, run_id)
    return any(step <= stored.get(key, -1) for key, step in first_steps.items())


def upsert_series(
    session: Session,
    run_id: int,
    points: Mapping[tuple[str, int], tuple[float | None, datetime]],
    first_steps: Mapping[str, int] | None = None,
) -> None:
    """Insert or overwrite one run's points ``{(key, step): (value, time)}`` on (run, key, step).

    ``first_steps`` (``{key: smallest step in points}``) lets Postgres take the append path when no
    stored point can be overwritten; without it every batch is merged.
    """
    if session.get_bind().dialect.name != "postgresql":
        _sqlite_upsert(
            session,
            [
                {"run_id": run_id, "key": k, "step": s, "value": v, "time": t}
                for (k, s), (v, t) in points.items()
            ],
        )
        return
    rows = [(run_id, k, s, v, _utc(t)) for (k, s), (v, t) in points.items()]
    try:
        if (
            first_steps is not None
            and not _may_overwrite(session, run_id, first_steps)
            and _append(session, rows)
        ):
            return
        _merge(session, rows)
    except psycopg.Error as exc:
        # raw driver errors, as SQLAlchemy would have wrapped them: the API's handler answers 409 (the run
        # was deleted meanwhile), 422 (a value Postgres refuses) or 503 (a lost connection), with a reason
        raise DBAPIError.instance("COPY metric", None, exc, psycopg.Error) from exc


def _sqlite_upsert(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    lite = sqlite.insert(Metric)
    stmt = lite.on_conflict_do_update(
        index_elements=["run_id", "key", "step"],
        set_={"value": lite.excluded.value, "time": lite.excluded.time},
    )
    for i in range(0, len(rows), 5000):
        session.execute(stmt, list(rows[i : i + 5000]))


def keys(session: Session, run_id: int) -> list[str]:
    """The run's metric keys: one row per key in metric_latest, not a DISTINCT over every point (69-80 ms
    at 200k points per run under the load test; 0.04 ms this way)."""
    return list(
        session.scalars(
            select(MetricLatest.key).where(MetricLatest.run_id == run_id).order_by(MetricLatest.key)
        )
    )


def extent(session: Session, run_id: int, key: str) -> tuple[int | None, int | None, int]:
    lo, hi = step_range(session, run_id, key)
    return lo, hi, count(session, run_id, key) if lo is not None else 0


def step_range(session: Session, run_id: int, key: str) -> tuple[int | None, int | None]:
    """The series' first and last step: two primary-key probes (no scan, unlike a count)."""
    row = session.execute(
        select(func.min(Metric.step), func.max(Metric.step)).where(Metric.run_id == run_id, Metric.key == key)
    ).one()
    return row[0], row[1]


def count(session: Session, run_id: int, key: str) -> int:
    return int(
        session.execute(
            select(func.count()).select_from(Metric).where(Metric.run_id == run_id, Metric.key == key)
        ).scalar_one()
    )


def buckets(
    session: Session, run_id: int, key: str, lo: int, hi: int, max_points: int, with_time: bool = False
) -> list[tuple[Any, ...]]:
    """Rows ``(step_start, step_end, min, max, last, count)`` per bucket, ``with_time``: and the time of
    the bucket's last point (a datetime, or SQLite's text of one)."""
    width = max(1, math.ceil((hi - lo + 1) / max_points))
    params = {"run_id": run_id, "key": key, "lo": lo, "hi": hi, "width": width}
    if session.get_bind().dialect.name == "sqlite" and width >= RANGE_WALK_MIN_WIDTH:
        return _buckets_by_range(session, run_id, key, lo, hi, width, with_time)
    if session.get_bind().dialect.name == "postgresql":
        # The planner cannot estimate the number of buckets (it guesses one per point), so the statement
        # looks expensive enough for JIT compilation, which then costs more than the query itself
        # (~170 ms of a ~680 ms query over 1,000,000 points; 16 of 23 ms for a zoom). Off for this
        # transaction only.
        session.execute(text("SET LOCAL jit = off"))
    return [tuple(r) for r in session.execute(_BUCKETS_TIMED if with_time else _BUCKETS, params)]


# Below this bucket width (a deep zoom: few points per bucket) one GROUP BY statement beats a statement
# per bucket on SQLite (1M-point series: width 1000: 246 vs 508 ms; width 100: 35 vs 51; width 10: 12 vs 7).
RANGE_WALK_MIN_WIDTH = 32
_RANGE_AGG = (
    "SELECT MIN(step), MAX(step), MIN(value), MAX(value), COUNT(*) FROM metric "
    "WHERE run_id = ? AND key = ? AND step >= ? AND step <= ?"
)
_VALUE_AT = "SELECT value, time FROM metric WHERE run_id = ? AND key = ? AND step = ?"


def _buckets_by_range(
    session: Session, run_id: int, key: str, lo: int, hi: int, width: int, with_time: bool = False
) -> list[tuple[Any, ...]]:
    """SQLite: one indexed range aggregate per bucket. SQLite sorts a GROUP BY over a computed bucket
    in a temporary B-tree (it cannot see that the bucket grows with the step), which costs as much as the
    scan itself; walking the primary-key index bucket by bucket needs no sort (2x faster at 1,000,000
    points). Same buckets as the single statement: [lo + i*width, lo + (i+1)*width - 1]."""
    cursor = session.connection().connection.driver_connection.cursor()  # type: ignore[union-attr]
    out: list[tuple[Any, ...]] = []
    start = lo
    while start <= hi:
        end = min(start + width - 1, hi)
        s0, s1, vmin, vmax, n = cursor.execute(_RANGE_AGG, (run_id, key, start, end)).fetchone()
        if n:
            vlast, tlast = cursor.execute(_VALUE_AT, (run_id, key, s1)).fetchone()
            out.append((s0, s1, vmin, vmax, vlast, n, tlast) if with_time else (s0, s1, vmin, vmax, vlast, n))
        start += width
    return out


# -- each series' latest point (the run's summary) ---------------------------------------------------

# rows per statement: 4 parameters a row, under SQLite's 32,766 and Postgres' 65,535 bound parameters
_LATEST_CHUNK = 2000


def upsert_latest(session: Session, run_id: int, latest: Mapping[str, tuple[int, float | None]]) -> None:
    """Record ``{key: (step, value)}`` as the run's latest points where the step is at least the stored
    one (a tie: the later write wins). No lock on the run: concurrent batches into one run each update
    their keys' rows, and the conditional upsert keeps the largest step whatever the commit order. Rows
    go in key order, so two batches lock shared keys' rows in one order (no deadlock between them)."""
    if not latest:
        return
    dialect = session.get_bind().dialect.name
    rows = [{"run_id": run_id, "key": k, "step": s, "value": v} for k, (s, v) in sorted(latest.items())]
    for i in range(0, len(rows), _LATEST_CHUNK):
        ins = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(MetricLatest)
        stmt = ins.values(rows[i : i + _LATEST_CHUNK])
        session.execute(
            stmt.on_conflict_do_update(
                index_elements=[MetricLatest.run_id, MetricLatest.key],
                set_={"step": stmt.excluded.step, "value": stmt.excluded.value},
                where=stmt.excluded.step >= MetricLatest.step,
            )
        )


def latest(session: Session, run_id: int) -> dict[str, tuple[int, float | None]]:
    """``{key: (step, value)}``: each of the run's series at its largest step."""
    stmt = (
        select(MetricLatest.key, MetricLatest.step, MetricLatest.value)
        .where(MetricLatest.run_id == run_id)
        .order_by(MetricLatest.key)
    )
    return {k: (int(s), v) for k, s, v in session.execute(stmt)}


def latest_steps(session: Session, run_id: int) -> dict[str, int]:
    return {k: s for k, (s, _) in latest(session, run_id).items()}


def summaries(session: Session, run_ids: Sequence[int]) -> dict[int, dict[str, float | None]]:
    """Each run's summary, ``{key: value at the key's largest step}`` (keys sorted), in one query."""
    out: dict[int, dict[str, float | None]] = {rid: {} for rid in run_ids}
    if not out:
        return out
    stmt = (
        select(MetricLatest.run_id, MetricLatest.key, MetricLatest.value)
        .where(MetricLatest.run_id.in_(list(out)))
        .order_by(MetricLatest.run_id, MetricLatest.key)
    )
    for rid, key, value in session.execute(stmt):
        out[rid][key] = value
    return out
