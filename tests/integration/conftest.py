from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.integration.platform import Platform


@pytest.fixture
def redis_db(redis_url: str) -> Iterator[str]:
    """A Redis database number of our own on the machine's Redis, flushed before and after."""
    db = random.randint(5, 15)
    client = redis.Redis.from_url(f"{redis_url}/{db}")
    client.flushdb()
    yield f"{redis_url}/{db}"
    client.flushdb()


@pytest.fixture
def pg_platform(tmp_path: Path, postgres_url: str, redis_db: str) -> Iterator[Platform]:
    platform = Platform(tmp_path / "home", postgres_url, redis_db)
    try:
        yield platform
    finally:
        platform.stop()


@pytest.fixture
def embedded_platform(tmp_path: Path) -> Iterator[Platform]:
    home = tmp_path / "home"
    platform = Platform(home, f"sqlite:///{home / 'reasonlab.db'}", "filesystem://")
    try:
        yield platform
    finally:
        platform.stop()


@pytest.fixture(scope="module")
def shared_embedded_platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    """One embedded platform (the API and one worker, started) for every test of a module that needs no
    fresh one: its tests must not depend on a clean platform (their own experiment names, their own run
    ids). Saves a platform's start and its 10-13 s teardown per test (issue 24)."""
    home = tmp_path_factory.mktemp("shared-embedded") / "home"
    platform = Platform(home, f"sqlite:///{home / 'reasonlab.db'}", "filesystem://")
    try:
        platform.start_api()
        platform.start_worker()
        yield platform
    finally:
        platform.stop()
