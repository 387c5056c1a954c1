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


@pytest.fixture
def one_thread() -> Iterator[None]:
    """Small tensors on a shared 2-core machine: one intra-op thread is many times faster than two."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
