"""Shared fixtures: real Postgres and Redis (a missing service fails, never skips) and embedded mode."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


# --- parallel runs (pytest-xdist, `make test`: docs/architecture.md, Test tiers) -------------------------------
# `make test` runs pytest with ``-n 4 --dist loadgroup --no-loadscope-reorder``. Every test of a module goes to
# one process (an xdist group per module: module-scoped fixtures such as ``shared_embedded_platform`` are
# made once, module-level state stays as its tests expect), except the tests marked ``slow`` or ``fault``
# that use no fixture wider than a test and below the session: each starts a platform of its own and mostly
# waits on it, so they are spread one by one over the processes. And they come first (the collection order
# is the order each process takes its work in), the fault tier before the other slow tests, so the longest
# waits overlap with everything else instead of ending the run.
_SHARED_SCOPES = ("package", "module", "class")
PASSWORD_HASH_COST = {
    "REASONLAB_PASSWORD_HASH_TIME_COST": "1",
    "REASONLAB_PASSWORD_HASH_MEMORY_KIB": "64",
    "REASONLAB_PASSWORD_HASH_PARALLELISM": "1",
}


def pytest_configure(config: pytest.Config) -> None:
    # In an xdist process (several share the cores): one OpenMP thread for torch here and in the platforms,
    # workers and `reasonlab up` the tests start (they inherit this environment; the worker's allow-list keeps
    # OMP_*). Two spinning intra-op threads per process on a 2-core machine running four processes slowed a
    # carma platform test from ~45 s to over 300 s. A value set by the caller is kept.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ.setdefault("OMP_NUM_THREADS", "1")
    # The SDK's tracked runs sample no system metrics unless a test asks (init's system_metrics_interval, or
    # the variable set by the test): a sample landing in a slow test's run would be one more point in it.
    os.environ.setdefault("REASONLAB_SYSTEM_METRICS_INTERVAL", "0")
    # MLflow's usage telemetry off, before anything imports mlflow: its client sets and deletes an
    # environment variable (_MLFLOW_TELEMETRY_SESSION_ID) from a thread of its own, and a deletion while
    # another thread iterates os.environ (requests reads the proxies from it on every call of MLflow's
    # client) raised KeyError in a test (tests/backend/test_mlflow_compat.py); and no test should send it
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    # argon2id at its cheapest for the passwords the tests hash and verify, here and in the platforms they
    # start: at the deployment's default cost each costs ~0.17 CPU-s, ~300 of them a run. The cost
    # itself, and the rehash when it changes, are tested at real costs (tests/backend/test_password_cost.py)
    for name, value in PASSWORD_HASH_COST.items():
        os.environ.setdefault(name, value)


def _runs_alone(item: pytest.Item) -> bool:
    if item.get_closest_marker("slow") is None and item.get_closest_marker("fault") is None:
        return False
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    return not any(fixturedef.scope in _SHARED_SCOPES for chain in defs for fixturedef in chain)


def _tier(item: pytest.Item) -> int:
    if item.get_closest_marker("fault") is not None:
        return 0
    return 1 if item.get_closest_marker("slow") is not None else 2


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group") is None and not _runs_alone(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
    # a module's place is that of its earliest tier, so its tests stay together (sorted is stable)
    module_tier: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        module_tier[module] = min(module_tier.get(module, 2), _tier(item))
    items[:] = sorted(
        items,
        key=lambda item: _tier(item) if _runs_alone(item) else module_tier[item.nodeid.split("::", 1)[0]],
    )


@pytest.fixture(scope="session")
def postgres_admin_url() -> Iterator[str]:
    if not _reachable("127.0.0.1", 5432):
        pytest.fail("PostgreSQL is not reachable on 127.0.0.1:5432: start it (see README, Testing)")
    yield PG_ADMIN_URL
    _POOL.drop_all()  # after every template (they depend on this fixture) and every test


@pytest.fixture(scope="session")
def redis_url() -> str:
    if not _reachable("127.0.0.1", 6379):
        pytest.fail("Redis is not reachable on 127.0.0.1:6379: start it (see README, Testing)")
    return REDIS_URL


@pytest.fixture(scope="session")
def postgres_template(postgres_admin_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A migrated database that per-test databases are cloned from (CREATE DATABASE ... TEMPLATE)."""
    from backend.bootstrap import migrate
    from backend.db import get_engine
    from backend.settings import Settings

    name = f"rl_template_{uuid.uuid4().hex[:12]}"
    admin = create_engine(postgres_admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = postgres_admin_url.rsplit("/", 1)[0] + f"/{name}"
    migrate(Settings(home=tmp_path_factory.mktemp("postgres-template-home"), database_url=url))
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


# --- per-test Postgres databases, reused --------------------------------------------------------------------
# A test's database is a clone of a session's template, as a new one would be. Cloning one (CREATE DATABASE
# ... TEMPLATE, then DROP DATABASE) cost Postgres ~0.13-0.27 CPU-s, ~400 times a run; TRUNCATE of every table
# as much (it makes every table's and index's files anew). Instead a database is emptied after its test
# and handed to the next test of this process that asks for the same template: every other session on it
# ended, every row deleted with triggers and foreign keys off (``session_replication_role = replica``), the
# template's own rows (the admin, alembic's version) copied back and every sequence set back where the
# template has it: ~0.025 CPU-s. A database whose schema the test changed (a migration test's downgrade, a
# table or trigger made or dropped) is dropped instead, as is one that cannot be emptied within its lock timeout,
# one a session stayed on, or one the API's background builders of this process are still working on.


_SCHEMA = """
  SELECT 'rel ' || n.nspname || '.' || c.relname || ' ' || c.relkind::text || ' '
         || coalesce(string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull
                                || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), ''), ',' ORDER BY a.attnum), '')
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
  LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
  WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
    AND n.nspname NOT LIKE 'pg_temp%'
  GROUP BY n.nspname, c.relname, c.relkind
  UNION ALL SELECT 'con ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
    WHERE connamespace <> 'pg_catalog'::regnamespace
  UNION ALL SELECT 'idx ' || indexrelid::regclass || ' ' || pg_get_indexdef(indexrelid) FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relnamespace <> 'pg_catalog'::regnamespace
    AND c.relnamespace <> 'pg_toast'::regnamespace
  UNION ALL SELECT 'trg ' || tgname || ' ' || tgenabled::text || ' ' || pg_get_triggerdef(oid) FROM pg_trigger
    WHERE NOT tgisinternal
  UNION ALL SELECT 'fn ' || p.oid::regprocedure || ' ' || md5(p.prosrc) FROM pg_proc p
    WHERE p.pronamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
  UNION ALL SELECT 'type ' || t.oid::regtype FROM pg_type t
    WHERE t.typnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
    AND t.typnamespace::regnamespace::text NOT LIKE 'pg_%'
  UNION ALL SELECT 'col ' || attrelid::regclass || '.' || attname || ' ' || attidentity::text || attgenerated::text
    || ' ' || attcollation FROM pg_attribute WHERE attnum > 0 AND NOT attisdropped
    AND attrelid IN (SELECT oid FROM pg_class WHERE relnamespace = 'public'::regnamespace)
  UNION ALL SELECT 'persist ' || oid::regclass || ' ' || relpersistence::text || ' ' || relrowsecurity
    || ' ' || coalesce(array_to_string(reloptions, ','), '') FROM pg_class
    WHERE relnamespace = 'public'::regnamespace
  UNION ALL SELECT 'view ' || oid::regclass || ' ' || pg_get_viewdef(oid) FROM pg_class
    WHERE relkind IN ('v', 'm') AND relnamespace = 'public'::regnamespace
  UNION ALL SELECT 'enum ' || enumtypid::regtype || ' ' || enumlabel || ' ' || enumsortorder FROM pg_enum
  UNION ALL SELECT 'seq ' || seqrelid::regclass || ' ' || seqincrement || ' ' || seqmin || ' ' || seqmax
    || ' ' || seqcycle FROM pg_sequence
  UNION ALL SELECT 'policy ' || polname || ' ' || polrelid::regclass FROM pg_policy
  UNION ALL SELECT 'rule ' || rulename || ' ' || ev_class::regclass FROM pg_rewrite WHERE rulename <> '_RETURN'
  UNION ALL SELECT 'ns ' || nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg_temp%' AND nspname NOT LIKE 'pg_toast_temp%'
  UNION ALL SELECT 'ext ' || extname || ' ' || extversion FROM pg_extension
  UNION ALL SELECT 'set ' || array_to_string(setconfig, ',') FROM pg_db_role_setting
    WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
"""
_SCHEMA_PRINT = f"SELECT md5(string_agg(x, ' ' ORDER BY x)) FROM ({_SCHEMA}) AS s(x)"


class _Template:
    """What a reused database is set back to: its template's schema (a fingerprint), rows and sequences."""

    def __init__(self, conn: Any) -> None:
        self.schema: str = conn.execute(_SCHEMA_PRINT).fetchone()[0]
        self.tables = [
            r[0]
            for r in conn.execute(
                "SELECT format('%I.%I', schemaname, tablename) FROM pg_tables"
                " WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1"
            )
        ]
        self.rows: dict[str, bytes] = {}
        for table in self.tables:
            if conn.execute(f"SELECT EXISTS (SELECT FROM {table})").fetchone()[0]:
                with conn.cursor().copy(f"COPY {table} TO STDOUT") as copy:
                    self.rows[table] = b"".join(bytes(chunk) for chunk in copy)
        self.sequences = [
            (seq, last, called)
            for seq, last, called in conn.execute(
                "SELECT format('%I.%I', schemaname, sequencename), coalesce(last_value, start_value),"
                " last_value IS NOT NULL FROM pg_sequences"
            )
        ]


class _DatabasePool:
    """This process's reused per-test databases, by template (see above)."""

    def __init__(self) -> None:
        self.free: dict[str, list[str]] = {}
        self.templates: dict[str, _Template] = {}
        self.made: set[str] = set()

    @staticmethod
    def _url(admin_url: str, name: str) -> str:
        return admin_url.rsplit("/", 1)[0] + f"/{name}"

    @staticmethod
    def _connect(admin_url: str, name: str) -> Any:
        import psycopg

        return psycopg.connect(
            _DatabasePool._url(admin_url, name).replace("postgresql+psycopg://", "postgresql://"),
            autocommit=True,
        )

    @contextlib.contextmanager
    def database(self, admin_url: str, template: str, prefix: str = "rl_test") -> Iterator[str]:
        from backend.db import get_engine

        if template not in self.templates:
            with self._connect(admin_url, template) as conn:  # closed before the clone below
                self.templates[template] = _Template(conn)
        free = self.free.setdefault(template, [])
        if free:
            name = free.pop()
        else:
            name = f"{prefix}_{uuid.uuid4().hex[:12]}"
            with self._connect(admin_url, "postgres") as admin:
                admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
            self.made.add(name)
        url = self._url(admin_url, name)
        try:
            yield url
        finally:
            get_engine(url).dispose()
            get_engine.cache_clear()
            if _quiesce(url) and self._reset(admin_url, name, self.templates[template]):
                free.append(name)
            else:
                self._drop(admin_url, name)

    def _reset(self, admin_url: str, name: str, template: _Template) -> bool:
        import psycopg

        others = "FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
        try:
            with self._connect(admin_url, "postgres") as admin:
                # what the test left connected (a platform's pool, a leaked session): ended, waited for up to
                # 5 s each; one that did not end in time could write into the next test's rows: dropped
                ended = admin.execute(f"SELECT pg_terminate_backend(pid, 5000) {others}", (name,)).fetchall()
                if not all(row[0] for row in ended):
                    return False
            with self._connect(admin_url, name) as conn:
                # the fingerprint names every relation: the same print, the template's tables
                if conn.execute(_SCHEMA_PRINT).fetchone()[0] != template.schema:
                    return False
                with conn.transaction():
                    conn.execute("SET LOCAL session_replication_role = replica")
                    conn.execute("SET LOCAL lock_timeout = '5s'")
                    conn.execute("; ".join(f"DELETE FROM {t}" for t in template.tables))
                    for table, rows in template.rows.items():
                        with conn.cursor().copy(f"COPY {table} FROM STDIN") as copy:
                            copy.write(rows)
                    for seq, last, called in template.sequences:
                        conn.execute("SELECT setval(%s, %s, %s)", (seq, last, called))
            with self._connect(admin_url, "postgres") as admin:  # nothing connected again meanwhile
                return admin.execute(f"SELECT count(*) {others}", (name,)).fetchone()[0] == 0
        except (
            psycopg.Error
        ) as exc:  # e.g. a role that may not set session_replication_role: a clone per test
            warnings.warn(f"test database {name} not reused (dropped): {exc}", stacklevel=1)
            return False

    def _drop(self, admin_url: str, name: str) -> None:
        with self._connect(admin_url, "postgres") as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.made.discard(name)
        for names in self.free.values():
            if name in names:
                names.remove(name)

    def drop_all(self) -> None:
        import psycopg

        for name in list(self.made):
            try:
                self._drop(PG_ADMIN_URL, name)
            except psycopg.Error as exc:  # the others are still dropped
                warnings.warn(f"test database {name} not dropped: {exc}", stacklevel=1)
        self.free.clear()
        self.templates.clear()


def _quiesce(url: str) -> bool:
    """This process's background builders of the API (auto indexes, seed-group summaries) done with the
    test's database, and the index uses noted for it forgotten: a job or a flush left for later would write
    into the next test's rows (where it used to fail on a dropped database). False if one is still busy."""
    autoindex = sys.modules.get("backend.query.autoindex")
    summary = sys.modules.get("backend.groups.summary")
    idle = True
    if autoindex is not None:
        idle = autoindex.indexer.idle(30) and idle
        autoindex.indexer.take_touched(url)
    if summary is not None:
        idle = summary.summarizer.idle(30) and idle
    return idle


_POOL = _DatabasePool()


@contextlib.contextmanager
def per_test_database(admin_url: str, template: str) -> Iterator[str]:
    """A database for one test, as a new clone of ``template`` would be (reused: ``_DatabasePool``)."""
    with _POOL.database(admin_url, template) as url:
        yield url


@pytest.fixture
def postgres_url(postgres_admin_url: str, postgres_template: str) -> Iterator[str]:
    """A migrated Postgres database for one test, as a fresh clone of the template (reused: see above)."""
    with per_test_database(postgres_admin_url, postgres_template) as url:
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


@pytest.fixture
def one_thread() -> Iterator[None]:
    """Small tensors on a shared 2-core machine: one intra-op thread is many times faster than two."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
