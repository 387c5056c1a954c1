"""Metric reads: a run's keys, a series' head and count, the downsampling query, and each series'
latest point of an experiment's runs (its runs table; a run's own summary, what ``RunPublic`` shows, is
the runs repository's: backend/runs/repository.py).

Downsampling gives equal step-range buckets with min, max, count and the value at the bucket's last
step, so a spike survives in ``max`` whatever the zoom. A narrow window (fewer than ``ROLLUP_WIDTHS[0]``
steps a bucket) is one SQL statement over the raw points; a wider one reads the roll-ups
(``backend.metrics.rollups``), so any window of a series reads about as many rows as it has buckets.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from backend.db import driver_rows
from backend.metrics.rollups import ROLLUP_WIDTHS
from backend.models import Metric, MetricLatest, MetricRollup
from backend.runs import repository as runs_repo

# ``last`` is looked up per bucket through the primary key (a correlated subquery: one index probe per
# bucket, on Postgres and SQLite alike). A plain join back to ``metric`` let the planner, which cannot
# estimate the number of buckets, hash the whole series: ~270 ms for a 1,000,000-point key even when
# the buckets cover 1% of it (bench/metric_query.py).
_BUCKETS_SQL = """
    WITH pts AS (
        SELECT step, value, nonfinite, (step - :lo) / :width AS bucket
        FROM metric
        WHERE run_id = :run_id AND key = :key AND step >= :lo AND step <= :hi
    ),
    agg AS (
        SELECT bucket, MIN(step) AS s0, MAX(step) AS s1, MIN(value) AS vmin, MAX(value) AS vmax, COUNT(*) AS n,
            COUNT(nonfinite) AS nf
        FROM pts GROUP BY bucket
    )
    SELECT agg.s0, agg.s1, agg.vmin, agg.vmax,
        (SELECT m.value FROM metric m WHERE m.run_id = :run_id AND m.key = :key AND m.step = agg.s1) AS vlast,
        agg.n, agg.nf,
        (SELECT m.nonfinite FROM metric m WHERE m.run_id = :run_id AND m.key = :key AND m.step = agg.s1){time}
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


def keys(session: Session, run_id: int) -> list[str]:
    """The run's metric keys: one row per key in metric_latest, not a DISTINCT over every point (69-80 ms
    at 200k points per run under the load test; 0.04 ms this way)."""
    return list(
        session.scalars(
            select(MetricLatest.key).where(MetricLatest.run_id == run_id).order_by(MetricLatest.key)
        )
    )


def head(session: Session, run_id: int, key: str) -> tuple[int | None, int | None, int]:
    """The series' first and last step and its number of points, in one round trip: two primary-key
    probes (no scan) and a sum over the coarsest roll-up (100 rows for 1,000,000 points). Scalar
    subqueries, not ``SELECT min(step), max(step)``: SQLite probes the index for a lone min or max only,
    and scanned the series for both (~140 ms at 1,000,000 points)."""
    series = (Metric.run_id == run_id, Metric.key == key)
    first = select(func.min(Metric.step)).where(*series).scalar_subquery()
    last = select(func.max(Metric.step)).where(*series).scalar_subquery()
    total = (
        select(func.coalesce(func.sum(MetricRollup.n), 0))
        .where(
            MetricRollup.run_id == run_id, MetricRollup.key == key, MetricRollup.width == ROLLUP_WIDTHS[-1]
        )
        .scalar_subquery()
    )
    row = session.execute(select(first, last, total)).one()
    return row[0], row[1], int(row[2])


def count(session: Session, run_id: int, key: str) -> int:
    """The series' number of points by counting them (a scan; ``head`` reads the roll-ups)."""
    return int(
        session.execute(
            select(func.count()).select_from(Metric).where(Metric.run_id == run_id, Metric.key == key)
        ).scalar_one()
    )


def buckets(
    session: Session, run_id: int, key: str, lo: int, hi: int, max_points: int, with_time: bool = False
) -> Sequence[Sequence[Any]]:
    """Rows ``(step_start, step_end, min, max, last, count, non-finite count, last's kind)`` per bucket
    (``common.nonfinite``: min, max and last are finite or NULL), at most ``max_points`` of them,
    ``with_time``: and the time of the bucket's last point (a datetime, or SQLite's text of one).

    Buckets of ``ceil((hi - lo + 1) / max_points)`` steps from ``lo`` over the raw points when that is
    under ``ROLLUP_WIDTHS[0]``; otherwise from the roll-ups: the widest roll-up width ``w`` not above it,
    buckets a multiple of ``w`` wide on a grid of multiples of ``w`` (each block falls in one bucket), the
    window's ragged ends filled from finer widths and at last from the raw points."""
    width = max(1, math.ceil((hi - lo + 1) / max_points))
    if width >= ROLLUP_WIDTHS[0]:
        return _buckets_from_rollups(session, run_id, key, lo, hi, max_points, with_time)
    if width == 1:  # a point a bucket: the points themselves, no grouping
        stmt = _RAW_POINTS_TIMED if with_time else _RAW_POINTS
        return session.execute(stmt, {"run_id": run_id, "key": key, "lo": lo, "hi": hi}).all()
    params = {"run_id": run_id, "key": key, "lo": lo, "hi": hi, "width": width}
    # No JIT here (the planner cannot estimate the number of buckets, guesses one per point, and would JIT
    # compile a statement that then costs less than the compilation: ~170 ms of a ~680 ms query over
    # 1,000,000 points, 16 of 23 ms for a zoom): every connection of the API's engine has it off
    # (backend/db.py, make_engine), so no SET of its own (a round trip on every chart's read)
    return session.execute(_BUCKETS_TIMED if with_time else _BUCKETS, params).all()


# each bucket's time only when asked (a chart over wall-clock time): decoding 1,000 timestamps costs
# more than reading the rows
_RAW_POINT = (
    "SELECT step, step, value, value, value, 1, CASE WHEN nonfinite IS NULL THEN 0 ELSE 1 END, nonfinite"
)
_RAW_WHERE = (
    " FROM metric WHERE run_id = :run_id AND key = :key AND step >= :lo AND step <= :hi ORDER BY step"
)
_RAW_POINTS = text(_RAW_POINT + _RAW_WHERE)
_RAW_POINTS_TIMED = text(_RAW_POINT + ", time" + _RAW_WHERE)
_ROLLUP_BLOCKS = text(
    "SELECT s0, s1, vmin, vmax, vlast, n, nf, klast FROM metric_rollup "
    "WHERE run_id = :run_id AND key = :key AND width = :width AND block >= :lo AND block <= :hi ORDER BY block"
)
_ROLLUP_BLOCKS_TIMED = text(
    "SELECT s0, s1, vmin, vmax, vlast, n, nf, klast, tlast FROM metric_rollup "
    "WHERE run_id = :run_id AND key = :key AND width = :width AND block >= :lo AND block <= :hi ORDER BY block"
)


def _cover(
    session: Session, run_id: int, key: str, lo: int, hi: int, level: int, with_time: bool, out: list[Any]
) -> None:
    """Append to ``out`` pieces ``(s0, s1, min, max, last, n, nf, klast[, time])`` covering steps ``lo..hi``
    exactly: the whole blocks of ``ROLLUP_WIDTHS[level]`` inside it, the ends by finer widths, then raw
    points."""
    if lo > hi:
        return
    if level < 0:
        stmt = _RAW_POINTS_TIMED if with_time else _RAW_POINTS
        out.extend(session.execute(stmt, {"run_id": run_id, "key": key, "lo": lo, "hi": hi}).all())
        return
    w = ROLLUP_WIDTHS[level]
    first, last = -(-lo // w), (hi + 1) // w - 1  # whole blocks inside lo..hi
    if first > last:
        _cover(session, run_id, key, lo, hi, level - 1, with_time, out)
        return
    _cover(session, run_id, key, lo, first * w - 1, level - 1, with_time, out)
    params = {"run_id": run_id, "key": key, "width": w, "lo": first, "hi": last}
    out.extend(session.execute(_ROLLUP_BLOCKS_TIMED if with_time else _ROLLUP_BLOCKS, params).all())
    _cover(session, run_id, key, (last + 1) * w, hi, level - 1, with_time, out)


def _buckets_from_rollups(
    session: Session, run_id: int, key: str, lo: int, hi: int, max_points: int, with_time: bool
) -> Sequence[Sequence[Any]]:
    width = max(1, math.ceil((hi - lo + 1) / max_points))
    level = max(i for i, w in enumerate(ROLLUP_WIDTHS) if w <= width)
    w = ROLLUP_WIDTHS[level]
    base = lo // w * w
    # a multiple of w, wide enough that the grid from base holds lo..hi in max_points buckets
    bucket = w * math.ceil(math.ceil((hi - base + 1) / max_points) / w)
    pieces: list[Any] = []  # rows of the database driver, in step order
    _cover(session, run_id, key, lo, hi, level, with_time, pieces)
    # pieces arrive in step order, so a bucket's pieces are consecutive: merge each into the one before
    # when it falls in the same bucket (most buckets are one piece: no merging at all)
    out: list[tuple[Any, ...]] = []
    current = -1
    b: list[Any] = []
    for piece in pieces:
        i = (piece[0] - base) // bucket
        if i != current:
            if b:
                out.append(tuple(b))
            current, b = i, list(piece)
            continue
        vmin, vmax = piece[2], piece[3]
        if vmin is not None and (b[2] is None or vmin < b[2]):
            b[2] = vmin
        if vmax is not None and (b[3] is None or vmax > b[3]):
            b[3] = vmax
        # later in step order: its last step is the bucket's last so far
        b[1], b[4], b[7] = piece[1], piece[4], piece[7]
        if with_time:
            b[8] = piece[8]
        b[5] += piece[5]
        b[6] += piece[6]
    if b:
        out.append(tuple(b))
    return out


def latest_steps(session: Session, run_id: int) -> dict[str, int]:
    """Each of the run's series' largest step (``backend.runs.repository.latest_metrics``)."""
    return {k: s for k, (s, _) in runs_repo.latest_metrics(session, run_id).items()}


_EXPERIMENT_LATEST = (
    "SELECT m.run_id, m.key, m.value, m.nonfinite FROM metric_latest m JOIN runs r ON r.id = m.run_id"
    " WHERE r.experiment_id = {p}"
)


_EXPERIMENT_LATEST_REV = (
    "SELECT count(*), coalesce(sum(m.rev), 0) FROM metric_latest m JOIN runs r ON r.id = m.run_id"
    " WHERE r.experiment_id = {p}"
)


def experiment_latest_rev(session: Session, experiment_id: int) -> tuple[int, int]:
    """``(rows, sum of rev)`` of the experiment's metric_latest rows: changes whenever one of their
    values does (a row's rev only grows), whatever order concurrent batches commit in."""
    count, total = driver_rows(session, _EXPERIMENT_LATEST_REV, [experiment_id])[0]
    return int(count), int(total)


def experiment_latest(session: Session, experiment_id: int) -> list[tuple[Any, ...]]:
    """Rows ``(run_id, key, value, nonfinite)``: every series' latest value of every run of an experiment, one join
    (no list of run ids to bind), as the driver gives them (a runs table pivots 20,000 into columns)."""
    return driver_rows(session, _EXPERIMENT_LATEST, [experiment_id])
