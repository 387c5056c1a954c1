"""Indexes the platform creates on first use (Postgres only, nothing on SQLite).

A page of runs or experiments sorted by ``params.<path>`` reads every matching row's spec and sorts them
unless the path has its sort index (``backend.query.sort_index_sql``: ~650 ms -> ~11 ms at 1,000,000 runs,
docs/benchmarks.md); a filter on the path reads every candidate's spec unless it has a filter index
(``filter_index_sql``: (project_id, the path's number or string), which bounds the scan to the matching
runs; the sort index would not, its second column being the value's IS NULL). So the list routes
``observe`` each request: the ``params`` paths it sorted by (that direction) or compared with numbers or
strings (``=``, ``<``, ``in``, ...; not ``!=``), and how long its SQL took. When the SQL took longer than
``Settings.auto_index_after_ms`` (150 ms: the API's goal for a first page) and the table holds at least
``Settings.auto_index_min_rows`` rows (20,000; ``pg_class.reltuples``, the planner's estimate, read only
then: no count), the missing indexes are queued for this process's builder thread, outside the request.
Both conditions: the time is what a user waits for and needs no query on the fast path, but on a loaded
machine a small table can be slow too, and there an index costs writes for nothing (the same query over
20,000 runs sorts in a few ms). The time also makes it load-dependent: a cold or queued request on a big
table can build an index that a quiet one would not have needed (the cap bounds what that costs).

The builder (one daemon thread per API process, started by the first job) holds a Postgres advisory lock
(``LOCK_KEY``, session level, taken by polling ``pg_try_advisory_lock``: see ``_lock``) for each job, so
two API processes never build at once: the second one finds the first one's row in ``auto_indexes`` (or its index in ``pg_index``) and builds nothing. It
drops the least recently used recorded index (``DROP INDEX CONCURRENTLY``) while ``auto_index_max``
(default 8; 0 turns the feature off) are recorded, builds the new one (``CREATE INDEX CONCURRENTLY``: the
table keeps taking writes), ``ANALYZE``s the table (the planner needs the index expressions' statistics to
choose it for a filter) and records it. A build that fails (an invalid index left by a cancelled
``CONCURRENTLY``) is dropped. Indexes an operator made by hand (``sort_index_sql``, ``filter_index_sql``)
have the same names, are used, and are never recorded nor dropped.

``last_used_at``: every observed request notes its paths in memory (a dict write, no SQL); the builder
writes them to ``auto_indexes`` every ``FLUSH_SECONDS`` and before it picks an index to drop.

The DDL is injection-proof twice over: the path has already parsed as the query language, and besides,
``safe_path`` refuses any part outside ``[A-Za-z0-9_-]`` (a quoted part with a quote, a semicolon or a
space never reaches DDL); the index name is ``sort_index_name`` / ``filter_index_name`` (``[a-z0-9_]`` and a
hash of the path).
"""

from __future__ import annotations

import logging
import queue
import re
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, insert, select, text, update
from sqlalchemy.engine import Connection, Engine

from backend.db import get_engine, utcnow
from backend.models import AutoIndex
from backend.query.compiler import EXPERIMENTS, RUNS, Entity
from backend.query.nodes import And, Compare, Expr, Field, In, Not, Or
from backend.query.parser import QueryError, parse, parse_field

log = logging.getLogger(__name__)

# pg_advisory_lock(LOCK_KEY): one builder at a time per database, whatever the process
LOCK_KEY = 0x52_4C_41_49  # "RLAI"
FLUSH_SECONDS = 30.0
LOCK_WAIT = 900.0  # seconds a builder waits for another process's build (1,000,000 runs: a few seconds)
_SAFE_PART = re.compile(r"[A-Za-z0-9_-]{1,100}")
_MAX_TOUCHED = 1000  # paths whose last use is kept in memory, at most (the oldest are forgotten)
ENTITIES = {"runs": RUNS, "experiments": EXPERIMENTS}
DIRECTIONS = ("asc", "desc", "num", "str")


def wait_idle(lock: threading.Lock, pending: set[Any], timeout: float) -> bool:
    """Wait until a background builder's ``pending`` set (guarded by ``lock``) is empty: True if it emptied
    within ``timeout`` seconds. The auto indexes' and the group summaries' builders (tests, benches)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with lock:
            if not pending:
                return True
        time.sleep(0.05)
    return False


@dataclass(frozen=True)
class Job:
    """One index to have: ``entity`` (``runs``, ``experiments``), ``path`` (``params.lr``), ``direction``:
    ``asc`` / ``desc`` for a sort's index (``sort_index_sql``), ``num`` / ``str`` for a filter's
    (``filter_index_sql``: the path's number or string)."""

    url: str
    entity: str
    path: str
    direction: str


def safe_path(f: Field) -> str | None:
    """``params.<a.b>`` as the canonical text the table records, or None when the field is not a params
    path or a part holds anything outside ``[A-Za-z0-9_-]`` (such a path never gets an index)."""
    if f.name != "params" or not f.path or f.aggregate is not None:
        return None
    if not all(_SAFE_PART.fullmatch(p) for p in f.path):
        return None
    return "params." + ".".join(f.path)


def paths_of(sort: str | None, desc: bool, q: str | None) -> list[tuple[str, str]]:
    """The (path, index) pairs a request would use an index for: its params sort (``asc``, ``desc``: a
    sort index), then each params path its filter compares with numbers (``num``) or strings (``str``: a
    filter index). Unparseable input gives nothing (the route answers its 422 before this is asked)."""
    out: dict[str, str] = {}
    if sort:
        try:
            path = safe_path(parse_field(sort))
        except QueryError:
            path = None
        if path is not None:
            out[path] = "desc" if desc else "asc"
    if q and q.strip():
        try:
            expr = parse(q)
        except QueryError:
            return list(out.items())
        pairs = list(out.items())
        for f, kind in _compared(expr):
            path = safe_path(f)
            if path is not None and (path, kind) not in pairs:
                pairs.append((path, kind))
        return pairs
    return list(out.items())


def _compared(expr: Expr) -> list[tuple[Field, str]]:
    """The fields ``expr`` compares (``= < <= > >=``, ``in``) with numbers (``num``) or strings (``str``)."""
    if isinstance(expr, Compare) and expr.op != "!=":
        values: tuple[Any, ...] = (expr.value,)
    elif isinstance(expr, In) and not expr.negated:
        values = expr.values
    elif isinstance(expr, And | Or):
        return [p for item in expr.items for p in _compared(item)]
    elif isinstance(expr, Not):
        return _compared(expr.item)
    else:
        return []
    kinds = dict.fromkeys(
        "str" if isinstance(v, str) else "num"
        for v in values
        if isinstance(v, str) or (isinstance(v, int | float) and not isinstance(v, bool))
    )
    return [(expr.field, k) for k in kinds]


class AutoIndexer:
    """The builder of one API process: a queue, a daemon thread, the paths' last uses in memory."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: queue.Queue[tuple[Job, int, int]] = queue.Queue()
        self._pending: set[Job] = set()
        self._touched: dict[tuple[str, str, str], datetime] = {}
        self._thread: threading.Thread | None = None
        self._last_flush = time.monotonic()
        self.built: list[Job] = []  # what this process built (tests, logs)

    # --- the request side: no SQL unless the request was slow ------------------------------------------
    def observe(
        self,
        settings: Any,
        dialect: str,
        entity: Entity,
        sort: str | None,
        desc: bool,
        q: str | None,
        elapsed_s: float,
    ) -> None:
        """Called by a list route after its page's SQL ran: note the paths' use; queue the missing
        indexes when the SQL took over ``auto_index_after_ms`` (the table's size is checked by the
        builder). Never raises."""
        if dialect != "postgresql" or settings.auto_index_max <= 0:
            return
        table = entity.id_column.table.name
        wanted = paths_of(sort, desc, q)
        if not wanted:
            return
        now = utcnow()
        with self._lock:
            for path, direction in wanted:
                self._touched[(settings.database_url, table, path + "\0" + direction)] = now
            while len(self._touched) > _MAX_TOUCHED:
                self._touched.pop(next(iter(self._touched)))
        if elapsed_s * 1000 < settings.auto_index_after_ms:
            return
        for path, direction in wanted:
            self.submit(Job(settings.database_url, table, path, direction), settings)

    def submit(self, job: Job, settings: Any) -> None:
        """Queue ``job`` for the builder thread (once while it is pending)."""
        with self._lock:
            if job in self._pending:
                return
            self._pending.add(job)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="auto-index", daemon=True)
                self._thread.start()
        self._queue.put((job, settings.auto_index_max, settings.auto_index_min_rows))

    def idle(self, timeout: float) -> bool:
        """Wait until no job is pending (tests): True if none is left."""
        return wait_idle(self._lock, self._pending, timeout)

    # --- the builder thread -----------------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            try:
                job, cap, min_rows = self._queue.get(timeout=FLUSH_SECONDS)
            except queue.Empty:
                self._flush_all()
                continue
            try:
                build(get_engine(job.url), job, cap, min_rows, self)
            except Exception:  # a dropped test database, a lost connection: the next slow request retries
                log.exception("auto index %s", job)
            finally:
                with self._lock:
                    self._pending.discard(job)
            if time.monotonic() - self._last_flush > FLUSH_SECONDS:
                self._flush_all()

    def take_touched(self, url: str) -> dict[tuple[str, str, str], datetime]:
        """The last uses noted for database ``url``, removed from memory: ``{(table, path, direction):
        time}``."""
        out: dict[tuple[str, str, str], datetime] = {}
        with self._lock:
            for key in [k for k in self._touched if k[0] == url]:
                _, table, rest = key
                path, direction = rest.split("\0")
                out[(table, path, direction)] = self._touched.pop(key)
        return out

    def _flush_all(self) -> None:
        self._last_flush = time.monotonic()
        with self._lock:
            urls = {k[0] for k in self._touched}
        for url in urls:
            try:
                with get_engine(url).begin() as conn:
                    flush(conn, self.take_touched(url))
            except Exception as exc:  # a database gone (a dropped test database) or down: a line, no trace
                log.warning("auto index: last uses of %s not written: %s", url.split("@")[-1], exc)


def flush(conn: Connection, touched: dict[tuple[str, str, str], datetime]) -> None:
    """Write noted last uses to ``auto_indexes``."""
    for (table, path, direction), at in touched.items():
        stmt = update(AutoIndex).where(
            AutoIndex.entity == table,
            AutoIndex.path == path,
            AutoIndex.direction == direction,
            AutoIndex.last_used_at < at,
        )
        conn.execute(stmt.values(last_used_at=at))


def _index_state(conn: Connection, name: str) -> bool | None:
    """True: the index exists and is valid; False: it exists, invalid (a failed CONCURRENTLY build);
    None: absent."""
    row = conn.execute(
        text(
            "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid WHERE c.relname = :n"
        ),
        {"n": name},
    ).first()
    return None if row is None else bool(row[0])


def build(engine: Engine, job: Job, cap: int, min_rows: int, indexer: AutoIndexer | None = None) -> bool:
    """Have ``job``'s index, under the advisory lock: True if this call built it. Nothing when the table is
    small, the path or the direction unknown or unsafe, or the index there already."""
    from backend.query import (
        FILTER_KINDS,
        filter_index_name,
        filter_index_sql,
        sort_index_name,
        sort_index_sql,
    )

    entity = ENTITIES.get(job.entity)
    try:
        f = parse_field(job.path)
    except QueryError:
        return False
    if entity is None or safe_path(f) != job.path or cap <= 0 or job.direction not in DIRECTIONS:
        return False  # refused before any DDL
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        if conn.dialect.name != "postgresql":
            return False
        if not _lock(conn):
            return False
        try:
            rows = conn.execute(
                text("SELECT reltuples FROM pg_class WHERE relname = :t AND relkind = 'r'"), {"t": job.entity}
            ).scalar()
            if max(float(rows if rows is not None else -1), 0.0) < min_rows:  # -1: never analyzed
                return False
            direction = job.direction
            if direction in FILTER_KINDS:
                name = filter_index_name(entity, job.path, direction)
                ddl = filter_index_sql(entity, job.path, direction)
            else:
                name = sort_index_name(entity, job.path, direction == "desc")
                ddl = sort_index_sql(entity, job.path, direction == "desc")
            state = _index_state(conn, name)
            if state:
                return False  # built already (by another process, or by an operator)
            if state is False:  # a failed build's leftover
                _drop(conn, name)
            conn.execute(delete(AutoIndex).where(AutoIndex.index_name == name))  # its index dropped by hand
            if indexer is not None:
                flush(conn, indexer.take_touched(job.url))
            while (conn.execute(select(func.count()).select_from(AutoIndex)).scalar() or 0) >= cap:
                oldest = conn.execute(
                    select(AutoIndex.id, AutoIndex.index_name)
                    .order_by(AutoIndex.last_used_at.asc(), AutoIndex.id.asc())
                    .limit(1)
                ).first()
                assert oldest is not None
                _drop(conn, oldest[1])
                conn.execute(delete(AutoIndex).where(AutoIndex.id == oldest[0]))
            assert ddl.split(" ON ")[0].endswith(f"IF NOT EXISTS {name}"), ddl
            started = time.perf_counter()
            try:
                conn.execute(text(ddl))
            except Exception:
                _drop(conn, name)
                raise
            conn.execute(text(f'ANALYZE "{job.entity}"'))
            now = utcnow()
            conn.execute(
                insert(AutoIndex).values(
                    entity=job.entity,
                    path=job.path,
                    direction=direction,
                    index_name=name,
                    created_at=now,
                    last_used_at=now,
                )
            )
            log.info(
                "auto index %s on %s (%s %s) built in %.1f s",
                name,
                job.entity,
                job.path,
                direction,
                time.perf_counter() - started,
            )
            if indexer is not None:
                indexer.built.append(job)
            return True
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": LOCK_KEY})


def _lock(conn: Connection, timeout: float = LOCK_WAIT) -> bool:
    """Take ``LOCK_KEY`` by trying every 0.2 s (a try is a statement that ends): never a blocking
    ``pg_advisory_lock``, whose waiting statement's transaction a ``CREATE INDEX CONCURRENTLY`` in the
    holder would wait for in turn (a deadlock Postgres breaks by failing one of them)."""
    end = time.monotonic() + timeout
    while True:
        if conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": LOCK_KEY}).scalar():
            return True
        if time.monotonic() > end:
            log.warning("auto index: another process held the lock for %.0f s; not built", timeout)
            return False
        time.sleep(0.2)


def _drop(conn: Connection, name: str) -> None:
    if not re.fullmatch(r"[a-z0-9_]{1,63}", name):  # the names *_index_name make; anything else stays
        raise ValueError(f"not an auto index name: {name!r}")
    conn.execute(text(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"'))


# the API process's builder
indexer = AutoIndexer()
