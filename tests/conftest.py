"""Shared fixtures: real Postgres and Redis (a missing service fails, never skips) and embedded mode."""

from __future__ import annotations

import contextlib
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

PG_ADMIN_URL = os.environ.get("REASONLAB_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("REASONLAB_TEST_REDIS", "redis://127.0.0.1:6379")


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def postgres_admin_url() -> str:
    if not _reachable("127.0.0.1", 5432):
        pytest.fail("PostgreSQL is not reachable on 127.0.0.1:5432: start it (see README, Testing)")
    return PG_ADMIN_URL


@pytest.fixture(scope="session")
def redis_url() -> str:
    if not _reachable("127.0.0.1", 6379):
        pytest.fail("Redis is not reachable on 127.0.0.1:6379: start it (see README, Testing)")
    return REDIS_URL


@pytest.fixture(scope="session")
def postgres_template(postgres_admin_url: str) -> Iterator[str]:
    """A migrated database that per-test databases are cloned from (CREATE DATABASE ... TEMPLATE)."""
    from backend.bootstrap import migrate
    from backend.db import get_engine
    from backend.settings import Settings

    name = f"rl_template_{uuid.uuid4().hex[:12]}"
    admin = create_engine(postgres_admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = postgres_admin_url.rsplit("/", 1)[0] + f"/{name}"
    migrate(Settings(home=Path("/tmp/reasonlab-template-home"), database_url=url))
    get_engine(url).dispose()
    get_engine.cache_clear()
    try:
        yield name
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextlib.contextmanager
def cloned_database(admin_url: str, template: str, prefix: str = "rl_test") -> Iterator[str]:
    """A new Postgres database cloned from ``template`` (CREATE DATABASE ... TEMPLATE): its URL, and on exit
    the app's engine for it disposed and the database dropped."""
    from backend.db import get_engine

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{template}"'))
    url = admin_url.rsplit("/", 1)[0] + f"/{name}"
    try:
        yield url
    finally:
        get_engine(url).dispose()
        get_engine.cache_clear()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def postgres_url(postgres_admin_url: str, postgres_template: str) -> Iterator[str]:
    """A fresh, migrated Postgres database for one test (a clone of the template), dropped afterwards."""
    with cloned_database(postgres_admin_url, postgres_template) as url:
        yield url


@pytest.fixture
def home(tmp_path: Path) -> Path:
    d = tmp_path / "home"
    d.mkdir()
    return d


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each API test runs embedded (SQLite) and against the machine's real Postgres."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'reasonlab.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url
