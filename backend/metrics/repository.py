"""Metric storage and the downsampling query.

Points are upserted on (run, key, step), so a resumed run or a re-sent batch overwrites instead of
duplicating. Downsampling gives equal step-range buckets with min, max, count and the value at the
bucket's last step, so a spike survives in ``max`` whatever the zoom. A narrow window (fewer than
``ROLLUP_WIDTHS[0]`` steps a bucket) is one SQL statement over the raw points; a wider one reads the
roll-ups (``metric_rollup``: per-block min/max/last/count at widths 10 to 10,000 steps, kept at ingest in
the points' transaction), so any window of a series reads about as many rows as it has buckets.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg
from sqlalchemy import bindparam, func, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from backend.db import driver_rows
from backend.mirror import repository as mirror
from backend.models import TS, Metric, MetricLatest, MetricRollup

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
    """Insert or overwrite one run's points ``{(key, step): (value, time)}`` on (run, key, step), and
    bring their roll-up blocks up to date.

    ``first_steps`` (``{key: smallest step in points}``) lets a batch that overwrites no stored point (a
    training loop's new steps) take the append path: on Postgres one COPY straight into ``metric``, and
    on both databases roll-ups summarised from the batch in hand (``add_rollups``) instead of re-read
    from the points (``refresh_rollups``). Without it every batch is merged and its blocks recomputed.
    """
    if session.get_bind().dialect.name != "postgresql":
        # SQLite serialises writers, and this check reads in the writing transaction: it holds
        appended = first_steps is not None and not _may_overwrite(session, run_id, first_steps)
        if not appended:  # before the points change: the MLflow mirror's watermarks (backend/mirror)
            mirror.note_changes(session, run_id, points, latest_steps(session, run_id))
        _sqlite_upsert(
            session,
            [
                {"run_id": run_id, "key": k, "step": s, "value": v, "time": t}
                for (k, s), (v, t) in points.items()
            ],
        )
        if appended:
            add_rollups(session, run_id, points)
        else:
            refresh_rollups(session, run_id, _spans(points))
        return
    rows = [(run_id, k, s, v, _utc(t)) for (k, s), (v, t) in points.items()]
    try:
        # a COPY that went through wrote only new points (the primary key refuses an existing one, a
        # concurrent writer's uncommitted one included): the batch is disjoint from every other point
        appended = (
            first_steps is not None
            and not _may_overwrite(session, run_id, first_steps)
            and _append(session, rows)
        )
        if appended:
            add_rollups(session, run_id, points)
        else:
            mirror.note_changes(session, run_id, points, latest_steps(session, run_id))
            _merge(session, rows)
            refresh_rollups(session, run_id, _spans(points))
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
    """Rows ``(step_start, step_end, min, max, last, count)`` per bucket, at most ``max_points`` of them,
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
    if session.get_bind().dialect.name == "postgresql":
        # The planner cannot estimate the number of buckets (it guesses one per point), so the statement
        # looks expensive enough for JIT compilation, which then costs more than the query itself
        # (~170 ms of a ~680 ms query over 1,000,000 points; 16 of 23 ms for a zoom). Off for this
        # transaction only.
        session.execute(text("SET LOCAL jit = off"))
    return session.execute(_BUCKETS_TIMED if with_time else _BUCKETS, params).all()


# -- roll-ups ------------------------------------------------------------------------------------------

# Block widths in steps, each a multiple of the one before (a block lies inside one block of every coarser
# width). A factor of 10 between them bounds a query's reads at ~10x its buckets: a window whose buckets
# are just under a width wide reads the width below.
ROLLUP_WIDTHS = (10, 100, 1000, 10000)

_ROLLUP_COLUMNS = "(run_id, key, width, block, s0, s1, vmin, vmax, n, vlast, tlast)"
_ROLLUP_UPSERT = """
    ON CONFLICT (run_id, key, width, block) DO UPDATE SET s0 = excluded.s0, s1 = excluded.s1,
        vmin = excluded.vmin, vmax = excluded.vmax, n = excluded.n, vlast = excluded.vlast, tlast = excluded.tlast
"""
# The finest width from the points of whole blocks, the coarser ones from the blocks of the width below
# (``r`` of them a block); ``WHERE true``: SQLite's reading of INSERT ... SELECT ... ON CONFLICT. ``last`` (value and time at the block's last step) is picked by a window function
# in the same pass: a join back on (key, last step) let the planner probe the whole range per block (a
# 10,000-point batch's roll-ups took ~180 ms that way).
_ROLLUP_FROM_POINTS = (
    f"INSERT INTO metric_rollup {_ROLLUP_COLUMNS}"
    + """
    SELECT run_id, key, {w}, blk, MIN(step), MAX(step), MIN(value), MAX(value), COUNT(*),
        MAX(CASE WHEN rn = 1 THEN value END), MAX(CASE WHEN rn = 1 THEN time END)
    FROM (
        SELECT run_id, key, step, value, time, step / {w} AS blk,
            ROW_NUMBER() OVER (PARTITION BY key, step / {w} ORDER BY step DESC) AS rn
        FROM metric WHERE run_id = :run_id AND key IN :keys AND step >= :lo AND step <= :hi
    ) p
    WHERE true
    GROUP BY run_id, key, blk
    """
    + _ROLLUP_UPSERT
)
_ROLLUP_FROM_FINER = (
    f"INSERT INTO metric_rollup {_ROLLUP_COLUMNS}"
    + """
    SELECT run_id, key, {w}, blk, MIN(s0), MAX(s1), MIN(vmin), MAX(vmax), SUM(n),
        MAX(CASE WHEN rn = 1 THEN vlast END), MAX(CASE WHEN rn = 1 THEN tlast END)
    FROM (
        SELECT run_id, key, s0, s1, vmin, vmax, n, vlast, tlast, block / {r} AS blk,
            ROW_NUMBER() OVER (PARTITION BY key, block / {r} ORDER BY block DESC) AS rn
        FROM metric_rollup
        WHERE run_id = :run_id AND key IN :keys AND width = {c} AND block >= :lo AND block <= :hi
    ) c
    WHERE true
    GROUP BY run_id, key, blk
    """
    + _ROLLUP_UPSERT
)


def _rollup_statement(width: int) -> Any:
    if width == ROLLUP_WIDTHS[0]:
        sql = _ROLLUP_FROM_POINTS.format(w=width)
    else:
        finer = ROLLUP_WIDTHS[ROLLUP_WIDTHS.index(width) - 1]
        sql = _ROLLUP_FROM_FINER.format(w=width, c=finer, r=width // finer)
    return text(sql).bindparams(bindparam("keys", expanding=True))


_ROLLUP_STATEMENTS = {w: _rollup_statement(w) for w in ROLLUP_WIDTHS}
# keys per statement (each bound twice)
_ROLLUP_KEYS_CHUNK = 500
# a lock on the run's roll-ups (pg_advisory_xact_lock(class, run id)): see refresh_rollups
_ROLLUP_LOCK_CLASS = 0x524C


def _spans(points: Mapping[tuple[str, int], Any]) -> dict[str, tuple[int, int]]:
    """``{key: (first step, last step)}`` of a batch."""
    spans: dict[str, tuple[int, int]] = {}
    for key, step in points:
        span = spans.get(key)
        spans[key] = (step, step) if span is None else (min(span[0], step), max(span[1], step))
    return spans


def refresh_rollups(session: Session, run_id: int, spans: Mapping[str, tuple[int, int]]) -> None:
    """Recompute the roll-up blocks over ``{key: (first step, last step)}`` of points just written.

    Each touched block is recomputed, not incremented: the finest width from the points (a partly filled
    block re-reads at most ``ROLLUP_WIDTHS[0] - 1`` older points), each coarser width from the ten blocks
    below it. So a re-sent batch, a resumed run rewriting its steps, or a batch overwriting a few points
    leaves the roll-ups equal to a recomputation from the points, never double-counted. Keys with the same
    span (a training loop's keys, logged at the same steps) share a statement per width.

    On Postgres two transactions writing into one run could each recompute a block before the other's
    points are visible and the later upsert would keep a stale block; a transaction-scoped advisory lock on
    the run makes the recomputations take turns, and a later one (a new statement under READ COMMITTED)
    sees the earlier one's committed points. Only this step waits: the points still go in concurrently.
    SQLite serialises writers anyway."""
    if not spans:
        return
    _lock_rollups(session, run_id)
    groups: dict[tuple[int, int], list[str]] = {}
    for key, span in spans.items():
        groups.setdefault(span, []).append(key)
    for (first, last), group in groups.items():
        group.sort()
        for i in range(0, len(group), _ROLLUP_KEYS_CHUNK):
            chunk = group[i : i + _ROLLUP_KEYS_CHUNK]
            for j, width in enumerate(ROLLUP_WIDTHS):
                if j == 0:  # steps of the touched blocks
                    lo, hi = first // width * width, last // width * width + width - 1
                else:  # blocks of the width below inside the touched blocks
                    r = width // ROLLUP_WIDTHS[j - 1]
                    lo, hi = first // width * r, last // width * r + r - 1
                session.execute(
                    _ROLLUP_STATEMENTS[width], {"run_id": run_id, "keys": chunk, "lo": lo, "hi": hi}
                )


def _lock_rollups(session: Session, run_id: int) -> None:
    """Postgres: the run's roll-ups to this transaction until it ends (see ``refresh_rollups``)."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(
            text("SELECT pg_advisory_xact_lock(:cls, :run_id)"), {"cls": _ROLLUP_LOCK_CLASS, "run_id": run_id}
        )


# A block's summary while it is built: [first step, last step, min, max, count, value and time at the
# last step]; min and max over the non-null values (NULL: none).
_Summary = list[Any]


def _absorb(b: _Summary, s0: int, s1: int, vmin: Any, vmax: Any, n: int, vlast: Any, tlast: Any) -> None:
    """Fold a disjoint block (or point) into ``b``."""
    if s0 < b[0]:
        b[0] = s0
    if s1 > b[1]:
        b[1], b[5], b[6] = s1, vlast, tlast
    if vmin is not None and (b[2] is None or vmin < b[2]):
        b[2] = vmin
    if vmax is not None and (b[3] is None or vmax > b[3]):
        b[3] = vmax
    b[4] += n


def _batch_blocks(
    points: Mapping[tuple[str, int], tuple[float | None, datetime]],
) -> dict[int, dict[tuple[str, int], _Summary]]:
    """``{width: {(key, block): summary}}`` of the points alone: the finest width from the points, each
    coarser one from the blocks of the width below."""
    w0 = ROLLUP_WIDTHS[0]
    finest: dict[tuple[str, int], _Summary] = {}
    get = finest.get
    for (key, step), (value, t) in points.items():
        b = get((key, step // w0))
        if b is None:
            finest[(key, step // w0)] = [step, step, value, value, 1, value, t]
            continue
        if step < b[0]:
            b[0] = step
        if step > b[1]:
            b[1], b[5], b[6] = step, value, t
        if value is not None:
            if b[2] is None or value < b[2]:
                b[2] = value
            if b[3] is None or value > b[3]:
                b[3] = value
        b[4] += 1
    out = {w0: finest}
    for finer, width in itertools.pairwise(ROLLUP_WIDTHS):
        r = width // finer
        level: dict[tuple[str, int], _Summary] = {}
        for (key, block), c in out[finer].items():
            b = level.get((key, block // r))
            if b is None:
                level[(key, block // r)] = list(c)
            else:
                _absorb(b, *c)
        out[width] = level
    return out


# Folding a block summarised from a batch into its stored row, if any (both disjoint: see add_rollups):
# min and max of the two (NULL: no value), counts added, value and time of the later last step.
_ROLLUP_FOLD = """
    ON CONFLICT (run_id, key, width, block) DO UPDATE SET
        s0 = CASE WHEN excluded.s0 < metric_rollup.s0 THEN excluded.s0 ELSE metric_rollup.s0 END,
        s1 = CASE WHEN excluded.s1 > metric_rollup.s1 THEN excluded.s1 ELSE metric_rollup.s1 END,
        vmin = CASE WHEN metric_rollup.vmin IS NULL OR excluded.vmin < metric_rollup.vmin
            THEN excluded.vmin ELSE metric_rollup.vmin END,
        vmax = CASE WHEN metric_rollup.vmax IS NULL OR excluded.vmax > metric_rollup.vmax
            THEN excluded.vmax ELSE metric_rollup.vmax END,
        n = metric_rollup.n + excluded.n,
        vlast = CASE WHEN excluded.s1 > metric_rollup.s1 THEN excluded.vlast ELSE metric_rollup.vlast END,
        tlast = CASE WHEN excluded.s1 > metric_rollup.s1 THEN excluded.tlast ELSE metric_rollup.tlast END
"""
# Postgres: the blocks go by binary COPY into a session-local staging table (no index: ~5 us a row, against
# ~15-25 us into metric_rollup and its primary key), then one INSERT ... SELECT folds them in.
_PG_ROLLUP_STAGE = (
    "CREATE TEMPORARY TABLE IF NOT EXISTS metric_rollup_stage (LIKE metric_rollup) ON COMMIT DELETE ROWS;"
    " DELETE FROM metric_rollup_stage"  # an earlier fold of this transaction
)
_PG_ROLLUP_COPY = f"COPY metric_rollup_stage {_ROLLUP_COLUMNS} FROM STDIN (FORMAT BINARY)"
_PG_ROLLUP_TYPES = [
    "int4",
    "varchar",
    "int4",
    "int8",
    "int8",
    "int8",
    "float8",
    "float8",
    "int4",
    "float8",
    "timestamptz",
]
_PG_ROLLUP_FOLD = (
    f"INSERT INTO metric_rollup {_ROLLUP_COLUMNS} SELECT {_ROLLUP_COLUMNS[1:-1]} FROM metric_rollup_stage"
    + _ROLLUP_FOLD
)
_SQLITE_ROLLUP_FOLD = text(
    f"INSERT INTO metric_rollup {_ROLLUP_COLUMNS}"
    " VALUES (:run_id, :key, :width, :block, :s0, :s1, :vmin, :vmax, :n, :vlast, :tlast)" + _ROLLUP_FOLD
).bindparams(bindparam("tlast", type_=TS))


def add_rollups(
    session: Session, run_id: int, points: Mapping[tuple[str, int], tuple[float | None, datetime]]
) -> None:
    """Bring the roll-up blocks over ``points`` up to date when the points were just written and none of
    them overwrote a stored point (the append path): each touched block is summarised from the batch in
    hand and folded into its stored row, if any, in one upsert, instead of re-reading the points
    (``refresh_rollups``: ~70 ms of a 10,000-point batch's ~190 ms on Postgres, bench/metric_ingest.py).

    Exact because the batch is disjoint from the stored points: a block's stored row summarises the
    committed points of its steps, the batch's summary its own, and min, max, count and the last step's
    value fold. Under the same advisory lock as ``refresh_rollups``, so a concurrent writer's fold, or
    recomputation, sees this one's committed rows. No read of the stored rows: the upsert's conflict
    check probes the primary key with every column bound (a DELETE ... RETURNING of the touched ranges
    was tried: Postgres 15 does not bound a btree scan by ``key = ANY(...)`` on a second column, and
    walked all of the run's blocks)."""
    if not points:
        return
    _lock_rollups(session, run_id)
    blocks = _batch_blocks(points)
    if session.get_bind().dialect.name == "postgresql":
        with _raw(session).cursor() as cur:
            cur.execute(_PG_ROLLUP_STAGE)
            with cur.copy(_PG_ROLLUP_COPY) as copy:
                copy.set_types(_PG_ROLLUP_TYPES)
                for width, level in blocks.items():
                    for (key, block), (s0, s1, vmin, vmax, n, vlast, tlast) in level.items():
                        copy.write_row((run_id, key, width, block, s0, s1, vmin, vmax, n, vlast, _utc(tlast)))
            cur.execute(_PG_ROLLUP_FOLD)
        return
    rows = [
        {
            "run_id": run_id,
            "key": key,
            "width": width,
            "block": block,
            "s0": s0,
            "s1": s1,
            "vmin": vmin,
            "vmax": vmax,
            "n": n,
            "vlast": vlast,
            "tlast": tlast,
        }
        for width, level in blocks.items()
        for (key, block), (s0, s1, vmin, vmax, n, vlast, tlast) in level.items()
    ]
    for i in range(0, len(rows), 2000):
        session.execute(_SQLITE_ROLLUP_FOLD, rows[i : i + 2000])


# each bucket's time only when asked (a chart over wall-clock time): decoding 1,000 timestamps costs
# more than reading the rows
_RAW_POINTS = text(
    "SELECT step, step, value, value, value, 1 FROM metric "
    "WHERE run_id = :run_id AND key = :key AND step >= :lo AND step <= :hi ORDER BY step"
)
_RAW_POINTS_TIMED = text(
    "SELECT step, step, value, value, value, 1, time FROM metric "
    "WHERE run_id = :run_id AND key = :key AND step >= :lo AND step <= :hi ORDER BY step"
)
_ROLLUP_BLOCKS = text(
    "SELECT s0, s1, vmin, vmax, vlast, n FROM metric_rollup "
    "WHERE run_id = :run_id AND key = :key AND width = :width AND block >= :lo AND block <= :hi ORDER BY block"
)
_ROLLUP_BLOCKS_TIMED = text(
    "SELECT s0, s1, vmin, vmax, vlast, n, tlast FROM metric_rollup "
    "WHERE run_id = :run_id AND key = :key AND width = :width AND block >= :lo AND block <= :hi ORDER BY block"
)


def _cover(
    session: Session, run_id: int, key: str, lo: int, hi: int, level: int, with_time: bool, out: list[Any]
) -> None:
    """Append to ``out`` pieces ``(s0, s1, min, max, last, n[, time])`` covering steps ``lo..hi``
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
        b[1], b[4] = piece[1], piece[4]
        if with_time:
            b[6] = piece[6]
        b[5] += piece[5]
    if b:
        out.append(tuple(b))
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
    rows = [
        {"run_id": run_id, "key": k, "step": s, "value": v, "rev": 1} for k, (s, v) in sorted(latest.items())
    ]
    for i in range(0, len(rows), _LATEST_CHUNK):
        ins = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(MetricLatest)
        stmt = ins.values(rows[i : i + _LATEST_CHUNK])
        session.execute(
            stmt.on_conflict_do_update(
                index_elements=[MetricLatest.run_id, MetricLatest.key],
                # rev: +1 a change of the row, the runs table's cache key (backend/experiments/table.py)
                set_={"step": stmt.excluded.step, "value": stmt.excluded.value, "rev": MetricLatest.rev + 1},
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


_EXPERIMENT_LATEST = (
    "SELECT m.run_id, m.key, m.value FROM metric_latest m JOIN runs r ON r.id = m.run_id"
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
    """Rows ``(run_id, key, value)``: every series' latest value of every run of an experiment, one join
    (no list of run ids to bind), as the driver gives them (a runs table pivots 20,000 into columns)."""
    return driver_rows(session, _EXPERIMENT_LATEST, [experiment_id])
