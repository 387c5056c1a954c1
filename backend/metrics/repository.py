"""Metric storage and the downsampling query.

Points are upserted on (run, key, step), so a resumed run or a re-sent batch overwrites instead of
duplicating. Downsampling is one SQL statement per key: equal step-range buckets with min, max, count
and the value at the bucket's last step, so a spike survives in ``max`` whatever the zoom.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.dialects import sqlite
from sqlalchemy.orm import Session

from backend.models import Metric

# ``last`` is looked up per bucket through the primary key (a correlated subquery: one index probe per
# bucket, on Postgres and SQLite alike). A plain join back to ``metric`` let the planner, which cannot
# estimate the number of buckets, hash the whole series: ~270 ms for a 1,000,000-point key even when
# the buckets cover 1% of it (bench/metric_query.py).
_BUCKETS = text(
    """
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
        agg.n
    FROM agg
    ORDER BY agg.bucket
    """
)


# Postgres: the points go by binary COPY into a session-local staging table, then one INSERT ... SELECT
# ... ON CONFLICT merges them. This replaced an executemany of one INSERT per row (SQLAlchemy's bulk
# path over psycopg's pipeline: ~40 us of API CPU per point) and is ~2x faster than one INSERT over
# unnest(arrays), whose text/array dumping is slow in psycopg (bench/metric_ingest.py, docs/benchmarks.md).
_PG_STAGE = """
    CREATE TEMPORARY TABLE IF NOT EXISTS metric_stage (
        run_id integer, key varchar(250), step bigint, value double precision, time timestamptz
    ) ON COMMIT DELETE ROWS
"""
_PG_COPY = "COPY metric_stage (run_id, key, step, value, time) FROM STDIN (FORMAT BINARY)"
_PG_MERGE = """
    INSERT INTO metric (run_id, key, step, value, time)
    SELECT run_id, key, step, value, time FROM metric_stage
    ON CONFLICT (run_id, key, step) DO UPDATE SET value = excluded.value, time = excluded.time
"""
_PG_TYPES = ["int4", "varchar", "int8", "float8", "timestamptz"]


def _utc(t: datetime) -> datetime:
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def _copy_merge(session: Session, rows: Iterable[tuple[int, str, int, float | None, datetime]]) -> None:
    """Postgres: ``rows`` (run_id, key, step, value, time), unique on (run_id, key, step), upserted."""
    raw = session.connection().connection.driver_connection  # psycopg.Connection, same transaction
    assert raw is not None
    with raw.cursor() as cur:
        cur.execute(_PG_STAGE)
        cur.execute("DELETE FROM metric_stage")  # an earlier upsert of this transaction
        with cur.copy(_PG_COPY) as copy:
            copy.set_types(_PG_TYPES)
            for row in rows:
                copy.write_row(row)
        cur.execute(_PG_MERGE)


def upsert_series(
    session: Session, run_id: int, points: Mapping[tuple[str, int], tuple[float | None, datetime]]
) -> None:
    """Insert or overwrite one run's points ``{(key, step): (value, time)}`` on (run, key, step)."""
    if session.get_bind().dialect.name == "postgresql":
        _copy_merge(session, ((run_id, k, s, v, _utc(t)) for (k, s), (v, t) in points.items()))
        return
    upsert(
        session,
        [{"run_id": run_id, "key": k, "step": s, "value": v, "time": t} for (k, s), (v, t) in points.items()],
    )


def upsert(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Insert or overwrite points ``{"run_id", "key", "step", "value", "time"}`` on (run, key, step).

    Within ``rows`` the last point of a (run, key, step) wins.
    """
    if session.get_bind().dialect.name == "postgresql":
        # ON CONFLICT DO UPDATE may not touch a row twice in one statement: keep each key's last point.
        latest = {(r["run_id"], r["key"], r["step"]): r for r in rows}
        _copy_merge(
            session,
            ((r["run_id"], r["key"], r["step"], r["value"], _utc(r["time"])) for r in latest.values()),
        )
        return
    lite = sqlite.insert(Metric)
    stmt = lite.on_conflict_do_update(
        index_elements=["run_id", "key", "step"],
        set_={"value": lite.excluded.value, "time": lite.excluded.time},
    )
    for i in range(0, len(rows), 5000):
        session.execute(stmt, list(rows[i : i + 5000]))


def keys(session: Session, run_id: int) -> list[str]:
    return list(
        session.scalars(select(Metric.key).where(Metric.run_id == run_id).distinct().order_by(Metric.key))
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
    session: Session, run_id: int, key: str, lo: int, hi: int, max_points: int
) -> list[tuple[Any, ...]]:
    width = max(1, math.ceil((hi - lo + 1) / max_points))
    params = {"run_id": run_id, "key": key, "lo": lo, "hi": hi, "width": width}
    if session.get_bind().dialect.name == "sqlite" and width >= RANGE_WALK_MIN_WIDTH:
        return _buckets_by_range(session, run_id, key, lo, hi, width)
    if session.get_bind().dialect.name == "postgresql":
        # The planner cannot estimate the number of buckets (it guesses one per point), so the statement
        # looks expensive enough for JIT compilation, which then costs more than the query itself
        # (~170 ms of a ~680 ms query over 1,000,000 points; 16 of 23 ms for a zoom). Off for this
        # transaction only.
        session.execute(text("SET LOCAL jit = off"))
    return [tuple(r) for r in session.execute(_BUCKETS, params)]


# Below this bucket width (a deep zoom: few points per bucket) one GROUP BY statement beats a statement
# per bucket on SQLite (1M-point series: width 1000: 246 vs 508 ms; width 100: 35 vs 51; width 10: 12 vs 7).
RANGE_WALK_MIN_WIDTH = 32
_RANGE_AGG = (
    "SELECT MIN(step), MAX(step), MIN(value), MAX(value), COUNT(*) FROM metric "
    "WHERE run_id = ? AND key = ? AND step >= ? AND step <= ?"
)
_VALUE_AT = "SELECT value FROM metric WHERE run_id = ? AND key = ? AND step = ?"


def _buckets_by_range(
    session: Session, run_id: int, key: str, lo: int, hi: int, width: int
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
            (vlast,) = cursor.execute(_VALUE_AT, (run_id, key, s1)).fetchone()
            out.append((s0, s1, vmin, vmax, vlast, n))
        start += width
    return out


def latest_steps(session: Session, run_id: int) -> dict[str, int]:
    stmt = select(Metric.key, func.max(Metric.step)).where(Metric.run_id == run_id).group_by(Metric.key)
    return {k: int(s) for k, s in session.execute(stmt)}
