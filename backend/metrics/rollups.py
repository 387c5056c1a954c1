"""Metric roll-ups: per-block min, max, last and count of each series at widths of 10 to 10,000 steps
(``metric_rollup``), kept at ingest in the points' transaction (``backend.metrics.points``), so a wide
window of a series reads about as many rows as it has buckets (``backend.metrics.reads``).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.orm import Session

from backend.db import psycopg_connection
from backend.metrics import pgarray
from backend.metrics.columns import Columns, rollup_blocks, rollup_rows
from backend.models import TS
from common.nonfinite import finite, kind

# Block widths in steps, each a multiple of the one before (a block lies inside one block of every coarser
# width). A factor of 10 between them bounds a query's reads at ~10x its buckets: a window whose buckets
# are just under a width wide reads the width below.
ROLLUP_WIDTHS = (10, 100, 1000, 10000)

_ROLLUP_COLUMNS = "(run_id, key, width, block, s0, s1, vmin, vmax, n, vlast, tlast, nf, klast)"
_ROLLUP_UPSERT = """
    ON CONFLICT (run_id, key, width, block) DO UPDATE SET s0 = excluded.s0, s1 = excluded.s1,
        vmin = excluded.vmin, vmax = excluded.vmax, n = excluded.n, vlast = excluded.vlast, tlast = excluded.tlast,
        nf = excluded.nf, klast = excluded.klast
"""
# The finest width from the points of whole blocks, the coarser ones from the blocks of the width below
# (``r`` of them a block); ``WHERE true``: SQLite's reading of INSERT ... SELECT ... ON CONFLICT. ``last`` (value and time at the block's last step) is picked by a window function
# in the same pass: a join back on (key, last step) let the planner probe the whole range per block (a
# 10,000-point batch's roll-ups took ~180 ms that way).
_ROLLUP_FROM_POINTS = (
    f"INSERT INTO metric_rollup {_ROLLUP_COLUMNS}"
    + """
    SELECT run_id, key, {w}, blk, MIN(step), MAX(step), MIN(value), MAX(value), COUNT(*),
        MAX(CASE WHEN rn = 1 THEN value END), MAX(CASE WHEN rn = 1 THEN time END),
        COUNT(nonfinite), MAX(CASE WHEN rn = 1 THEN nonfinite END)
    FROM (
        SELECT run_id, key, step, value, time, nonfinite, step / {w} AS blk,
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
        MAX(CASE WHEN rn = 1 THEN vlast END), MAX(CASE WHEN rn = 1 THEN tlast END),
        SUM(nf), MAX(CASE WHEN rn = 1 THEN klast END)
    FROM (
        SELECT run_id, key, s0, s1, vmin, vmax, n, vlast, tlast, nf, klast, block / {r} AS blk,
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


def batch_spans(points: Mapping[tuple[str, int], Any]) -> dict[str, tuple[int, int]]:
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
# last step, count of non-finite values]; min and max over the finite values (NULL: none), the last value
# as logged (NaN and infinities included: split into vlast and klast when written).
_Summary = list[Any]


def _absorb(
    b: _Summary, s0: int, s1: int, vmin: Any, vmax: Any, n: int, vlast: Any, tlast: Any, nf: int
) -> None:
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
    b[7] += nf


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
        v = finite(value)  # what min and max see
        odd = 0 if v is not None or value is None else 1
        if b is None:
            finest[(key, step // w0)] = [step, step, v, v, 1, value, t, odd]
            continue
        if step < b[0]:
            b[0] = step
        if step > b[1]:
            b[1], b[5], b[6] = step, value, t
        if v is not None:
            if b[2] is None or v < b[2]:
                b[2] = v
            if b[3] is None or v > b[3]:
                b[3] = v
        b[4] += 1
        b[7] += odd
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
        tlast = CASE WHEN excluded.s1 > metric_rollup.s1 THEN excluded.tlast ELSE metric_rollup.tlast END,
        nf = metric_rollup.nf + excluded.nf,
        klast = CASE WHEN excluded.s1 > metric_rollup.s1 THEN excluded.klast ELSE metric_rollup.klast END
"""
# Postgres: the blocks go by binary COPY into a session-local staging table (no index: ~5 us a row, against
# ~15-25 us into metric_rollup and its primary key), then one INSERT ... SELECT folds them in.
_PG_ROLLUP_STAGE = [
    "CREATE TEMPORARY TABLE IF NOT EXISTS metric_rollup_stage (LIKE metric_rollup) ON COMMIT DELETE ROWS",
    "DELETE FROM metric_rollup_stage",  # an earlier fold of this transaction
]
_PG_ROLLUP_COPY = f"COPY metric_rollup_stage {_ROLLUP_COLUMNS} FROM STDIN (FORMAT BINARY)"
_PG_ROLLUP_FOLD = (
    f"INSERT INTO metric_rollup {_ROLLUP_COLUMNS} SELECT {_ROLLUP_COLUMNS[1:-1]} FROM metric_rollup_stage"
    + _ROLLUP_FOLD
)
_SQLITE_ROLLUP_FOLD = text(
    f"INSERT INTO metric_rollup {_ROLLUP_COLUMNS}"
    " VALUES (:run_id, :key, :width, :block, :s0, :s1, :vmin, :vmax, :n, :vlast, :tlast, :nf, :klast)"
    + _ROLLUP_FOLD
).bindparams(bindparam("tlast", type_=TS))


_LATEST_FROM_STAGE = f"""
    INSERT INTO metric_latest (run_id, key, step, value, nonfinite, rev)
    SELECT DISTINCT ON (key) run_id, key, s1, vlast, klast, 1 FROM metric_rollup_stage
    WHERE width = {ROLLUP_WIDTHS[0]} ORDER BY key, s1 DESC
    ON CONFLICT (run_id, key) DO UPDATE SET step = excluded.step, value = excluded.value,
        nonfinite = excluded.nonfinite, rev = metric_latest.rev + 1
    WHERE excluded.step >= metric_latest.step
"""
_EXTREMES_FROM_STAGE = f"""
    UPDATE metric_latest SET
        vmin = (SELECT MIN(r.vmin) FROM metric_rollup r WHERE r.run_id = metric_latest.run_id
                AND r.key = metric_latest.key AND r.width = {ROLLUP_WIDTHS[-1]}),
        vmax = (SELECT MAX(r.vmax) FROM metric_rollup r WHERE r.run_id = metric_latest.run_id
                AND r.key = metric_latest.key AND r.width = {ROLLUP_WIDTHS[-1]})
    WHERE run_id = {{run}} AND key IN (
        SELECT key FROM metric_rollup_stage WHERE width = {ROLLUP_WIDTHS[-1]})
"""


def stage_rollups_statements(run_id: int) -> list[str]:
    """Postgres: the run's roll-up lock (see ``refresh_rollups``) and an empty staging table for a
    batch's blocks (statements without parameters: only the integer run id in them)."""
    return [f"SELECT pg_advisory_xact_lock({_ROLLUP_LOCK_CLASS}, {int(run_id)})", *_PG_ROLLUP_STAGE]


def copy_rollups(cur: Any, run_id: int, cols: Columns) -> None:
    """Postgres: the batch's blocks at every width into the staging table, by binary COPY."""
    with cur.copy(_PG_ROLLUP_COPY) as copy:
        copy.write(rollup_rows(cols, run_id, ROLLUP_WIDTHS))


def fold_rollups_statements(run_id: int, *, latest: bool) -> list[str]:
    """Postgres: the staged blocks folded into ``metric_rollup``; with ``latest``, then each staged series'
    latest point into ``metric_latest`` (its finest blocks' last step: the batch's largest step of the
    key, kept where it is not smaller than the stored one, as ``points.upsert_latest``) and its extremes
    from the coarsest blocks (``points.refresh_extremes``), in key order."""
    if not latest:
        return [_PG_ROLLUP_FOLD]
    return [_PG_ROLLUP_FOLD, _LATEST_FROM_STAGE, _EXTREMES_FROM_STAGE.format(run=int(run_id))]


# The batch's blocks into the staging table from one array per column (a small batch's, in the pipeline of
# points._append): times as microseconds since 1970, added in two exact parts (whole seconds, then the rest)
PG_STAGE_FROM_ARRAYS = (
    f"INSERT INTO metric_rollup_stage {_ROLLUP_COLUMNS}"
    " SELECT %s, k, w, b, s0, s1, lo, hi, c, vl,"
    " timestamptz 'epoch' + (tl / 1000000) * interval '1 second' + (tl %% 1000000) * interval '1 microsecond',"
    " nf, nullif(kl, 0)"
    " FROM unnest(%s::varchar[], %s::int4[], %s::int8[], %s::int8[], %s::int8[], %s::float8[], %s::float8[],"
    " %s::int4[], %s::float8[], %s::int8[], %s::int4[], %s::int2[]) AS u(k, w, b, s0, s1, lo, hi, c, vl, tl, nf, kl)"
)


def stage_arrays(cols: Columns) -> list[str]:
    """The batch's blocks at every width as the array literals of ``PG_STAGE_FROM_ARRAYS`` (NaN: NULL; a
    ``klast`` 0 is NULL by the statement): text that Postgres parses, not lists psycopg would adapt
    element by element (``backend.metrics.pgarray``)."""
    out: list[list[Any]] = [[] for _ in range(12)]
    for b in rollup_blocks(cols, ROLLUP_WIDTHS):
        out[0] += b.key.tolist()
        out[1] += [b.width] * len(b.key)
        for column, values in zip(
            out[2:], (b.block, b.s0, b.s1, b.vmin, b.vmax, b.n, b.vlast, b.tlast, b.nf, b.klast), strict=True
        ):
            column += [None if v != v else v for v in values.tolist()]
    floating = {5, 6, 8}  # lo, hi, vl (float8); the rest are integers
    return [
        pgarray.texts_by_index(cols.keys, out[0]),
        *(
            pgarray.floats(column) if i in floating else pgarray.ints(column)
            for i, column in enumerate(out[1:], 1)
        ),
    ]


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
    if session.get_bind().dialect.name == "postgresql":
        with psycopg_connection(session).cursor() as cur:
            cur.execute("; ".join(stage_rollups_statements(run_id)))
            copy_rollups(cur, run_id, Columns.from_points(points))
            cur.execute("; ".join(fold_rollups_statements(run_id, latest=False)))
        return
    blocks = _batch_blocks(points)
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
            "vlast": finite(vlast),
            "tlast": tlast,
            "nf": nf,
            "klast": kind(vlast),
        }
        for width, level in blocks.items()
        for (key, block), (s0, s1, vmin, vmax, n, vlast, tlast, nf) in level.items()
    ]
    for i in range(0, len(rows), 2000):
        session.execute(_SQLITE_ROLLUP_FOLD, rows[i : i + 2000])
