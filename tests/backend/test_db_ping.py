"""A pooled Postgres connection is pinged before use only after sitting idle in the pool
(backend/db.py, ``PING_AFTER_IDLE``): one the database dropped while idle that long is replaced before any
statement runs; one dropped within that time fails its statement once (the API answers 503, "try again"),
and the pool's older connections are replaced, so the next checkout works."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import OperationalError

from backend import db

pytestmark = pytest.mark.postgres


def _backend_pid(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())


def _terminate(url: str, pid: int) -> None:
    admin = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_an_idle_connection_is_pinged_and_a_dropped_one_replaced(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = db.make_engine(postgres_url)
    try:
        pid = _backend_pid(engine)  # the pool's one connection, back in the pool
        _terminate(postgres_url, pid)
        monkeypatch.setattr(db, "PING_AFTER_IDLE", 0.0)  # idle long enough: pinged at checkout
        assert _backend_pid(engine) != pid  # the ping failed, a new connection answered
    finally:
        engine.dispose()


def test_a_connection_used_a_moment_ago_is_not_pinged(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = db.make_engine(postgres_url)
    try:
        pid = _backend_pid(engine)
        _terminate(postgres_url, pid)
        monkeypatch.setattr(db, "PING_AFTER_IDLE", 3600.0)  # used a moment ago: no ping
        with pytest.raises(OperationalError) as failed:
            _backend_pid(engine)
        assert failed.value.connection_invalidated
        assert _backend_pid(engine) != pid  # the next checkout has a new connection
    finally:
        engine.dispose()
