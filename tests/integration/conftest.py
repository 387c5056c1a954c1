from __future__ import annotations

import os
import random
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.integration.platform import Platform, wait_for

# Redis databases the tests may take on the machine's Redis (0-4 are left to whatever else runs there). A
# test claims one with SET NX in database 0 (a claim expires after an hour, longer than pytest's timeout), so
# neither the pytest-xdist processes of one run nor two test runs side by side ever share one; each xdist
# process starts its search at a database of its own.
REDIS_TEST_DBS = range(5, 16)
REDIS_CLAIM_TTL_S = 3600


def _claim_key(db: int) -> str:
    return f"reasonlab-tests:redis-db:{db}"


@pytest.fixture
def redis_db(redis_url: str, worker_id: str) -> Iterator[str]:
    """A Redis database number of our own on the machine's Redis, claimed, flushed before and after."""
    claims = redis.Redis.from_url(f"{redis_url}/0")
    start = int(worker_id[2:]) if worker_id.startswith("gw") else random.randrange(len(REDIS_TEST_DBS))
    owner = f"{os.getpid()}:{uuid.uuid4().hex}"

    def claim() -> int | None:
        for i in range(len(REDIS_TEST_DBS)):
            db = REDIS_TEST_DBS[(start + i) % len(REDIS_TEST_DBS)]
            if claims.set(_claim_key(db), owner, nx=True, ex=REDIS_CLAIM_TTL_S):
                return db
        return None

    db = wait_for(claim, 120, "a free Redis test database (5-15)", interval=0.5)
    client = redis.Redis.from_url(f"{redis_url}/{db}")
    client.flushdb()
    try:
        yield f"{redis_url}/{db}"
    finally:
        client.flushdb()
        if claims.get(_claim_key(db)) == owner.encode():
            claims.delete(_claim_key(db))
        client.close()
        claims.close()


def mirrored(request: pytest.FixtureRequest) -> bool:
    """The test checks the API's MLflow mirror (``@pytest.mark.mlflow_mirror``): its platform runs one."""
    return request.node.get_closest_marker("mlflow_mirror") is not None


@pytest.fixture
def pg_platform(
    request: pytest.FixtureRequest, tmp_path: Path, postgres_url: str, redis_db: str
) -> Iterator[Platform]:
    platform = Platform(tmp_path / "home", postgres_url, redis_db, mirror=mirrored(request))
    try:
        yield platform
    finally:
        platform.stop()


@pytest.fixture
def embedded_platform(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Platform]:
    home = tmp_path / "home"
    platform = Platform(home, f"sqlite:///{home / 'reasonlab.db'}", "filesystem://", mirror=mirrored(request))
    try:
        yield platform
    finally:
        platform.stop()


@pytest.fixture(scope="module")
def shared_embedded_platform(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Platform]:
    """One embedded platform (the API and one worker, started) for every test of a module that needs no
    fresh one: its tests must not depend on a clean platform (their own experiment names, their own run
    ids). Saves a platform's start and its 10-13 s teardown per test. Its MLflow mirror runs where
    the module says ``SHARED_PLATFORM_MIRROR = True``."""
    home = tmp_path_factory.mktemp("shared-embedded") / "home"
    mirror = bool(getattr(request.module, "SHARED_PLATFORM_MIRROR", False))
    # the shipped worker's preload (every kind imported before the fork): one start serves the module
    platform = Platform(
        home, f"sqlite:///{home / 'reasonlab.db'}", "filesystem://", mirror=mirror, preload=True
    )
    try:
        platform.start_api()
        platform.start_worker()
        yield platform
    finally:
        platform.stop()
