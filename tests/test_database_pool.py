"""The per-test Postgres databases (tests/conftest.py, ``_DatabasePool``): the database a test gets after
another test used it is what a fresh clone of the template would be, or it is not handed out again."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest

from tests.conftest import PG_ADMIN_URL, _DatabasePool

pytestmark = pytest.mark.postgres


def _connect(url: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True)


@pytest.fixture
def template(postgres_admin_url: str) -> Iterator[str]:
    """A template of one table with a sequence, a row and a trigger (cloned per test of this module)."""
    name = "rl_pooltpl_" + uuid.uuid4().hex[:10]
    with _connect(postgres_admin_url) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        with _connect(postgres_admin_url.rsplit("/", 1)[0] + f"/{name}") as conn:
            conn.execute(
                "CREATE TABLE item (id serial PRIMARY KEY, parent int REFERENCES item (id), name text)"
            )
            conn.execute("CREATE TABLE audit (n int)")
            conn.execute(
                "CREATE FUNCTION audit_item() RETURNS trigger LANGUAGE plpgsql AS"
                " $$ BEGIN INSERT INTO audit VALUES (1); RETURN NULL; END $$"
            )
            conn.execute(
                "CREATE TRIGGER item_audit AFTER DELETE ON item FOR EACH ROW EXECUTE FUNCTION audit_item()"
            )
            conn.execute("INSERT INTO item (name) VALUES ('seeded')")
        yield name
    finally:
        with _connect(postgres_admin_url) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pool() -> Iterator[_DatabasePool]:
    made = _DatabasePool()
    yield made
    made.drop_all()


def _databases() -> set[str]:
    with _connect(PG_ADMIN_URL) as admin:
        return {r[0] for r in admin.execute("SELECT datname FROM pg_database")}


def test_a_used_database_comes_back_as_its_template(template: str, pool: _DatabasePool) -> None:
    with pool.database(PG_ADMIN_URL, template) as url:
        first = url
        with _connect(url) as conn:
            conn.execute("INSERT INTO item (parent, name) VALUES (1, 'child'), (1, 'other')")
            conn.execute("DELETE FROM item WHERE name = 'other'")
        leftover = _connect(url)  # a session the test left open, holding locks
        leftover.execute("SELECT pg_advisory_lock(7)")
        leftover.execute("BEGIN")
        leftover.execute("SELECT * FROM item FOR UPDATE")
    with pool.database(PG_ADMIN_URL, template) as url:
        assert url == first  # the same database, handed out again
        with _connect(url) as conn:
            assert conn.execute("SELECT id, parent, name FROM item").fetchall() == [(1, None, "seeded")]
            assert conn.execute("SELECT count(*) FROM audit").fetchone() == (0,)  # no trigger fired
            assert conn.execute("INSERT INTO item (name) VALUES ('next') RETURNING id").fetchone() == (2,)
            assert conn.execute("SELECT pg_try_advisory_lock(7)").fetchone() == (True,)
    assert _gone(leftover)  # ended by the reset


def _gone(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    try:
        conn.execute("SELECT 1")
    except psycopg.OperationalError:
        return True
    return False


def test_a_database_whose_schema_changed_is_dropped_not_reused(template: str, pool: _DatabasePool) -> None:
    with pool.database(PG_ADMIN_URL, template) as url:
        changed = url
        with _connect(url) as conn:
            conn.execute("ALTER TABLE item ADD COLUMN extra int")
    with pool.database(PG_ADMIN_URL, template) as url:
        assert url != changed
        with _connect(url) as conn:
            conn.execute("DROP TRIGGER item_audit ON item")
        dropped_trigger = url
    with pool.database(PG_ADMIN_URL, template) as url:
        assert url not in (changed, dropped_trigger)
    names = _databases()
    assert changed.rsplit("/", 1)[1] not in names and dropped_trigger.rsplit("/", 1)[1] not in names
    pool.drop_all()
    assert url.rsplit("/", 1)[1] not in _databases()  # drop_all: none left behind
