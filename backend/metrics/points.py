"""Metric points written: one run's batch upserted on (run, key, step), so a resumed run or a re-sent
batch overwrites instead of duplicating, in the transaction that brings its roll-up blocks
(``backend.metrics.rollups``) and its series' latest points (``metric_latest``) up to date.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import psycopg
from sqlalchemy import bindparam, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from backend.db import as_utc, psycopg_connection
from backend.metrics import pgarray
from backend.metrics.columns import Columns
from backend.metrics.reads import latest_steps
from backend.metrics.rollups import (
    PG_STAGE_FROM_ARRAYS,
    ROLLUP_WIDTHS,
    add_rollups,
    batch_spans,
    copy_rollups,
    fold_rollups_statements,
    refresh_rollups,
    stage_arrays,
    stage_rollups_statements,
)
from backend.mirror import repository as mirror
from backend.models import Metric, MetricLatest
from common.nonfinite import finite, kind

# Postgres ingest. The common case, a training loop logging new steps, goes straight into ``metric``
# (inside a savepoint): a large batch by one binary COPY, a small one (up to SMALL_BATCH points) by one
# INSERT over arrays, pipelined with its roll-ups (``_append``). A batch that may overwrite stored points (a retry, a resumed run:
# some key's first step is not after its stored latest step), or whose COPY meets an existing point (a
# concurrent writer of the same steps), goes by COPY into a session-local staging table and one INSERT
# ... SELECT ... ON CONFLICT DO UPDATE. Either way the run's existence is checked once per statement by
# a trigger (migration 0003), not once per point by a foreign key (bench/metric_ingest.py,
# docs/benchmarks.md: COPY straight in is ~2x faster than staging + merge, the per-point foreign key
# check was ~40% of the merge). The merge replaced an executemany of one INSERT per row (~40 us of API
# CPU per point); one INSERT over unnest(arrays) was slower for 10,000 points (psycopg's text dumping of
# lists), and is used only where round trips, not points, are the cost.
_PG_COLUMNS = "(run_id, key, step, value, nonfinite, time)"
_PG_TYPES = ["int4", "varchar", "int8", "float8", "int2", "timestamptz"]
_PG_STAGE = """
    CREATE TEMPORARY TABLE IF NOT EXISTS metric_stage (
        run_id integer, key varchar(250), step bigint, value double precision, nonfinite smallint,
        time timestamptz
    ) ON COMMIT DELETE ROWS
"""
# the run's series' largest steps (``reads.latest_steps``), for the append path's overwrite check
_PG_LATEST_STEPS = "SELECT key, step FROM metric_latest WHERE run_id = {run}"
# A batch of at most this many points is inserted from one array per column, in one pipeline with its
# roll-ups (psycopg dumps lists slower than it writes COPY rows: larger batches go by COPY)
SMALL_BATCH = 1000
# times as microseconds since 1970, added in two exact parts (whole seconds, then the rest; %% is %)
_PG_INSERT_ARRAYS = (
    f"INSERT INTO metric {_PG_COLUMNS}"
    " SELECT %s, k, s, v, nullif(c, 0),"
    " timestamptz 'epoch' + (t / 1000000) * interval '1 second' + (t %% 1000000) * interval '1 microsecond'"
    " FROM unnest(%s::varchar[], %s::int8[], %s::float8[], %s::int2[], %s::int8[]) AS u(k, s, v, c, t)"
)
# ``mirror.note_changes`` for a batch appended below some series' latest steps (every such point new):
# each key's smallest such step, as that function writes it on Postgres
_PG_NOTE_BELOW = """
    INSERT INTO mirror_series (run_id, key, seq, changed_from)
    SELECT %s, k, 1, s FROM unnest(%s::varchar[], %s::int8[]) AS u(k, s) ORDER BY k
    ON CONFLICT (run_id, key) DO UPDATE SET seq = mirror_series.seq + 1,
        changed_from = least(coalesce(mirror_series.changed_from, excluded.changed_from), excluded.changed_from)
"""
_PG_MERGE = """
    INSERT INTO metric (run_id, key, step, value, nonfinite, time)
    SELECT run_id, key, step, value, nonfinite, time FROM metric_stage ORDER BY key, step
    ON CONFLICT (run_id, key, step) DO UPDATE
        SET value = excluded.value, nonfinite = excluded.nonfinite, time = excluded.time
"""

Row = tuple[int, str, int, float | None, int | None, datetime]


def _copy(cur: psycopg.Cursor[Any], table: str, rows: Sequence[Row]) -> None:
    with cur.copy(f"COPY {table} {_PG_COLUMNS} FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(_PG_TYPES)
        for row in rows:
            copy.write_row(row)


def _append(session: Session, run_id: int, cols: Columns, *, latest: bool) -> bool:
    """The append path on Postgres: the overwrite check (with a savepoint), the points straight into
    ``metric``, the roll-ups' lock and staging table, the batch's blocks, and their fold into the stored
    blocks and, with ``latest``, the series' latest points and extremes from the staged blocks; a batch
    with steps below some series' latest step also notes them for the MLflow mirror. False, with nothing
    written, if the points met an existing one (a retry, a resumed run) or a concurrent writer deadlocked
    with this one: the caller merges instead.

    A small batch (MLflow's client sends ~20 points a request) costs its round trips, not its points:
    after the check, one pipeline sends everything, the points and blocks as arrays (two round trips in
    all, against ~10 statement by statement). A large one costs its rows: the points and blocks go by
    binary COPY, their rows built by numpy (``Columns``), not one Python call per point (five round trips;
    docs/benchmarks.md, "Logging from a script"). Only integers are written into the statements' text."""
    run = int(run_id)
    conn = psycopg_connection(session)
    with conn.cursor() as cur:
        cur.execute(f"SAVEPOINT metric_append; {_PG_LATEST_STEPS.format(run=run)}")
        cur.nextset()
        stored = dict(cur.fetchall())
        # keys with steps at or below their stored latest step: the batch may overwrite points (a retry,
        # a resumed run), or add new ones below (MLflow's client sends from up to 10 threads, so batches
        # arrive out of order: ~1 in 5 of its requests). Appended all the same: the insert refuses an
        # existing point, and then nothing is written and the caller merges; otherwise every such step is
        # new, so the MLflow mirror's note (``mirror.note_changes``) is each key's smallest of them
        below = _steps_below(cols, stored)
        # The whole append under the savepoint, released last: a refused point, or a deadlock anywhere in
        # it, rolls all of it back and the caller merges. Locks in the merge path's order: the mirror's
        # note, the points, then the roll-ups' lock.
        release = "RELEASE SAVEPOINT metric_append"
        tail = [
            *stage_rollups_statements(run),
            "STAGE",
            *fold_rollups_statements(run, latest=latest),
            release,
        ]
        try:
            if len(cols) <= SMALL_BATCH:
                values = [
                    v if f else None for v, f in zip(cols.value.tolist(), cols.stored().tolist(), strict=True)
                ]
                # the columns as array literals Postgres parses (backend.metrics.pgarray), not lists
                points = [
                    run,
                    pgarray.texts_by_index(cols.keys, cols.key.tolist()),
                    pgarray.plain_ints(cols.step.tolist()),
                    pgarray.floats(values),
                    pgarray.plain_ints(cols.nonfinite().tolist()),
                    pgarray.plain_ints(cols.time.tolist()),
                ]
                with conn.pipeline():
                    if below:
                        cur.execute(_PG_NOTE_BELOW, _note_params(run, below))
                    cur.execute(_PG_INSERT_ARRAYS, points)
                    for sql in tail:
                        if sql == "STAGE":
                            cur.execute(PG_STAGE_FROM_ARRAYS, [run, *stage_arrays(cols)])
                        else:
                            cur.execute(sql)
                return True
            if below:
                cur.execute(_PG_NOTE_BELOW, _note_params(run, below))
            with cur.copy(f"COPY metric {_PG_COLUMNS} FROM STDIN (FORMAT BINARY)") as copy:
                copy.write(cols.copy_rows(run))
            at = tail.index("STAGE")
            cur.execute("; ".join(tail[:at]))
            copy_rollups(cur, run, cols)
            cur.execute("; ".join(tail[at + 1 :]))
        except (psycopg.errors.UniqueViolation, psycopg.errors.DeadlockDetected):
            cur.execute("ROLLBACK TO SAVEPOINT metric_append; RELEASE SAVEPOINT metric_append")
            return False
    return True


def _steps_below(cols: Columns, stored: Mapping[str, int]) -> dict[str, int]:
    """``{key: the batch's smallest step at or below the key's stored latest step}``, for the keys that
    have one (the points are sorted by key and step: each key's first point is its smallest step)."""
    return {key: step for key, step in cols.first_steps().items() if key in stored and step <= stored[key]}


def _note_params(run: int, below: Mapping[str, int]) -> list[Any]:
    keys = sorted(below)
    return [run, keys, [below[k] for k in keys]]


def _merge(session: Session, rows: Sequence[Row]) -> None:
    """Upsert ``rows`` (unique on run, key, step) through the staging table, in key order: concurrent
    merges of overlapping batches lock their common points in one order."""
    with psycopg_connection(session).cursor() as cur:
        cur.execute(_PG_STAGE)
        cur.execute("DELETE FROM metric_stage")  # an earlier upsert of this transaction
        _copy(cur, "metric_stage", rows)
        cur.execute(_PG_MERGE)


def _may_overwrite(session: Session, run_id: int, first_steps: Mapping[str, int]) -> bool:
    """True if a key's first step in the batch is not after the key's latest stored step."""
    stored = latest_steps(session, run_id)
    return any(step <= stored.get(key, -1) for key, step in first_steps.items())


def write(session: Session, run_id: int, cols: Columns) -> None:
    """A batch into the run: its points (upserted on run, key and step), their roll-up blocks, and each
    series' latest point (``upsert_latest``) and extremes (``refresh_extremes``)."""
    if session.get_bind().dialect.name == "postgresql":
        try:
            if _append(session, run_id, cols, latest=True):
                return
        except psycopg.Error as exc:
            raise DBAPIError.instance("COPY metric", None, exc, psycopg.Error) from exc
        upsert_series(session, run_id, cols.points())  # overwrites: the merge
    else:
        upsert_series(session, run_id, cols.points(), cols.first_steps())
    tops = cols.tops()
    upsert_latest(session, run_id, tops)
    refresh_extremes(session, run_id, list(tops))


def upsert_series(
    session: Session,
    run_id: int,
    points: Mapping[tuple[str, int], tuple[float | None, datetime]],
    first_steps: Mapping[str, int] | None = None,
) -> None:
    """Insert or overwrite one run's points ``{(key, step): (value, time)}`` on (run, key, step), and
    bring their roll-up blocks up to date. A value is a float as logged (NaN and infinities included:
    stored as a NULL value and their kind, common/nonfinite.py) or None (a gap).

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
                {"run_id": run_id, "key": k, "step": s, "value": finite(v), "nonfinite": kind(v), "time": t}
                for (k, s), (v, t) in points.items()
            ],
        )
        if appended:
            add_rollups(session, run_id, points)
        else:
            refresh_rollups(session, run_id, batch_spans(points))
        return
    try:
        # a COPY that went through wrote only new points (the primary key refuses an existing one, a
        # concurrent writer's uncommitted one included): the batch is disjoint from every other point
        if first_steps is not None and _append(session, run_id, Columns.from_points(points), latest=False):
            return
        mirror.note_changes(session, run_id, points, latest_steps(session, run_id))
        # in (key, step) order: every writer into the run (COPY or merge) takes the points' index
        # entries in one order, so two overlapping batches wait for each other, never in a cycle
        _merge(
            session,
            sorted((run_id, k, s, finite(v), kind(v), as_utc(t)) for (k, s), (v, t) in points.items()),
        )
        refresh_rollups(session, run_id, batch_spans(points))
    except psycopg.Error as exc:
        # raw driver errors, as SQLAlchemy would have wrapped them: the API's handler answers 409 (the run
        # was deleted meanwhile), 422 (a value Postgres refuses) or 503 (a lost connection), with a reason
        raise DBAPIError.instance("COPY metric", None, exc, psycopg.Error) from exc


def _sqlite_upsert(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    lite = sqlite.insert(Metric)
    stmt = lite.on_conflict_do_update(
        index_elements=["run_id", "key", "step"],
        set_={"value": lite.excluded.value, "nonfinite": lite.excluded.nonfinite, "time": lite.excluded.time},
    )
    for i in range(0, len(rows), 5000):
        session.execute(stmt, list(rows[i : i + 5000]))


# -- each series' latest point (the run's summary) ---------------------------------------------------

# rows per statement: 6 parameters a row, under SQLite's 32,766 and Postgres' 65,535 bound parameters
_LATEST_CHUNK = 2000


def upsert_latest(session: Session, run_id: int, latest: Mapping[str, tuple[int, float | None]]) -> None:
    """Record ``{key: (step, value)}`` (a value as ``upsert_series`` takes it) as the run's latest points where the step is at least the stored
    one (a tie: the later write wins). No lock on the run: concurrent batches into one run each update
    their keys' rows, and the conditional upsert keeps the largest step whatever the commit order. Rows
    go in key order, so two batches lock shared keys' rows in one order (no deadlock between them)."""
    if not latest:
        return
    dialect = session.get_bind().dialect.name
    rows = [
        {"run_id": run_id, "key": k, "step": s, "value": finite(v), "nonfinite": kind(v), "rev": 1}
        for k, (s, v) in sorted(latest.items())
    ]
    for i in range(0, len(rows), _LATEST_CHUNK):
        ins = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(MetricLatest)
        stmt = ins.values(rows[i : i + _LATEST_CHUNK])
        session.execute(
            stmt.on_conflict_do_update(
                index_elements=[MetricLatest.run_id, MetricLatest.key],
                # rev: +1 a change of the row, the runs table's cache key (backend/experiments/table.py)
                set_={
                    "step": stmt.excluded.step,
                    "value": stmt.excluded.value,
                    "nonfinite": stmt.excluded.nonfinite,
                    "rev": MetricLatest.rev + 1,
                },
                where=stmt.excluded.step >= MetricLatest.step,
            )
        )


# -- each series' smallest and largest value (the query language's min() and max()) ---------------------

_EXTREMES = text(
    f"""
    UPDATE metric_latest SET
        vmin = (SELECT MIN(r.vmin) FROM metric_rollup r WHERE r.run_id = metric_latest.run_id
                AND r.key = metric_latest.key AND r.width = {ROLLUP_WIDTHS[-1]}),
        vmax = (SELECT MAX(r.vmax) FROM metric_rollup r WHERE r.run_id = metric_latest.run_id
                AND r.key = metric_latest.key AND r.width = {ROLLUP_WIDTHS[-1]})
    WHERE run_id = :run_id AND key IN :keys
    """
).bindparams(bindparam("keys", expanding=True))


def refresh_extremes(session: Session, run_id: int, keys: Sequence[str]) -> None:
    """Set ``metric_latest.vmin`` / ``vmax`` of the run's ``keys`` to their series' smallest and largest
    finite values, read from the coarsest roll-up blocks (a few rows a series), after ``upsert_series``
    and ``upsert_latest`` wrote the batch: exact when a batch overwrites points (a resumed run), not only
    when it adds some. It runs under the roll-ups' advisory lock on the run (taken by ``upsert_series`` on
    Postgres), so a concurrent batch into the run recomputes after this one commits and sees its blocks."""
    ordered = sorted(set(keys))
    for i in range(0, len(ordered), _LATEST_CHUNK):
        session.execute(_EXTREMES, {"run_id": run_id, "keys": ordered[i : i + _LATEST_CHUNK]})
