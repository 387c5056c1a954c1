"""Database engine, sessions and the declarative base (SQLAlchemy 2.0, typed)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, MetaData, create_engine, event, func, select
from sqlalchemy.exc import InvalidatePoolError
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

if TYPE_CHECKING:
    import psycopg

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(t: datetime) -> datetime:
    """``t``, read as UTC when it carries no time zone."""
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def psycopg_connection(session: Session) -> psycopg.Connection[Any]:
    """The session's psycopg connection, in the session's transaction (Postgres only: COPY)."""
    import psycopg

    raw = session.connection().connection.driver_connection
    assert isinstance(raw, psycopg.Connection)
    return raw


def _sqlite_pragmas(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
    # WAL lets the dashboard read while the API writes; busy_timeout waits instead of failing on a lock.
    cur = dbapi_connection.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def make_engine(url: str, statement_timeout_ms: int = 0) -> Engine:
    """An engine of ``url``; on Postgres with ``statement_timeout_ms``, each of its connections starts with
    that statement_timeout (``session_factory``: the requests' engine)."""
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    # JIT off: the app's queries are short OLTP reads and writes (a page, a group, a claim); Postgres's JIT
    # compiles a plan it guesses costly (a grouped query over many runs), which costs more than it saves
    # here (about a third of a grouped request at 50,000 runs: docs/benchmarks.md, Query language at scale)
    options = "-c jit=off"
    if statement_timeout_ms > 0:
        options += f" -c statement_timeout={int(statement_timeout_ms)}"
    engine = create_engine(url, pool_size=10, max_overflow=20, connect_args={"options": options})
    dialect = engine.dialect

    def ping_if_idle(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        used = record.info.get(_USED)
        if used is not None and time.monotonic() - used < PING_AFTER_IDLE:
            return
        try:
            dialect.do_ping(dbapi_connection)
        except Exception as exc:  # as SQLAlchemy's pre-ping: every older connection of the pool is replaced
            raise InvalidatePoolError("the pooled connection did not answer its ping") from exc

    event.listen(engine, "connect", _note_use)
    event.listen(engine, "checkin", _note_use)
    event.listen(engine, "checkout", ping_if_idle)
    return engine


# A pooled connection is pinged before use (SQLAlchemy's pre-ping, a round trip) only when it has sat in
# the pool this long: one that was used a moment ago is alive. A request that checks out two connections
# (the edge's credential lookup, then the route's session) paid two of a small request's ~11 round trips
# for pings (docs/benchmarks.md, "Logging from a script"). What this leaves: a connection the database
# dropped within this time (a restart) fails its request once, with a 503 ("try again"), and SQLAlchemy
# then replaces every connection of the pool that is older than the failure.
PING_AFTER_IDLE = 5.0  # seconds
_USED = "reasonlab_used"


def _note_use(_dbapi_connection: Any, record: Any) -> None:
    record.info[_USED] = time.monotonic()


@lru_cache(maxsize=8)
def get_engine(url: str, statement_timeout_ms: int = 0) -> Engine:
    return make_engine(url, statement_timeout_ms)


def session_factory(engine: Engine, statement_timeout_ms: int = 0) -> sessionmaker[Session]:
    """Sessions of ``engine``; with ``statement_timeout_ms`` (Postgres), every statement of theirs is cancelled
    past that many milliseconds. They run on a sibling engine of the same database whose connections start
    with that ``statement_timeout``, so no transaction pays a ``SET LOCAL`` round trip for it (one of a
    metric write's ~6), and the background loops and index builds, on ``engine`` itself, keep no limit."""
    if statement_timeout_ms > 0 and engine.dialect.name == "postgresql":
        engine = get_engine(engine.url.render_as_string(hide_password=False), statement_timeout_ms)
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session committed at the end of the block, rolled back on error (the commit boundary)."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def lock_row(session: Session, key: Any, value: int) -> None:
    """Hold the row whose primary key ``key`` (a column, e.g. ``Run.id``) is ``value`` until commit
    (Postgres: FOR NO KEY UPDATE, which rows that reference it do not wait for; SQLite writes one at a time
    anyway), so two requests adding to one of its capped collections take turns at the cap."""
    session.execute(select(key).where(key == value).with_for_update(key_share=True))


def count_rows(session: Session, model: Any, *where: Any) -> int:
    """How many rows of ``model``'s table the conditions ``where`` select."""
    return int(session.scalar(select(func.count()).select_from(model).where(*where)) or 0)


def driver_rows(session: Session, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` as the database driver returns them (plain tuples, no type processing), in the
    session's transaction: for reads of tens of thousands of rows, where SQLAlchemy's row objects cost
    as much as the database. ``sql`` marks its positional parameters ``{p}`` (``?`` for sqlite3, ``%s``
    for psycopg)."""
    mark = "%s" if session.get_bind().dialect.name == "postgresql" else "?"
    cursor = session.connection().connection.cursor()
    try:
        cursor.execute(sql.format(p=mark), tuple(params))
        return list(cursor.fetchall())
    finally:
        cursor.close()
