"""The outbox: runs are committed queued first, sent when the broker is reachable, retried while it is not."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from backend.db import get_engine, session_factory
from backend.dispatch import Dispatcher
from backend.models import Run
from tests.backend.conftest import Api


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisProcess:
    """A throwaway redis-server we can stop and start again (the machine's own stays untouched)."""

    def __init__(self, port: int, folder: Path) -> None:
        self.port, self.folder, self.proc = port, folder, None

    def start(self) -> None:
        cmd = [
            "redis-server",
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        self.proc = subprocess.Popen([*cmd, "--dir", str(self.folder)], stdout=subprocess.DEVNULL)  # type: ignore[assignment]
        for _ in range(100):
            try:
                redis.Redis(port=self.port).ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()  # type: ignore[unreachable]
            self.proc.wait(10)
            self.proc = None


@pytest.fixture
def throwaway_redis(tmp_path: Path, redis_url: str) -> Iterator[RedisProcess]:
    r = RedisProcess(_free_port(), tmp_path)
    yield r
    r.stop()


def _queued_messages(port: int, queue: str) -> list[dict]:
    return [json.loads(m) for m in redis.Redis(port=port).lrange(queue, 0, -1)]


def test_broker_down_at_submit_then_back(api: Api, throwaway_redis: RedisProcess) -> None:
    settings = api.settings.model_copy(update={"broker_url": f"redis://127.0.0.1:{throwaway_redis.port}/0"})
    factory = session_factory(get_engine(settings.database_url))
    dispatcher = Dispatcher(settings, factory)
    run = api.submit({}).json()["runs"][0]

    assert dispatcher.dispatch_once() == 0  # broker down: nothing sent, nothing lost
    with factory() as s:
        stored = s.get(Run, run["id"])
        assert stored is not None and stored.status == "queued" and stored.dispatched is False

    throwaway_redis.start()
    assert dispatcher.dispatch_once() == 1
    msgs = _queued_messages(throwaway_redis.port, "cpu")
    assert len(msgs) == 1 and msgs[0]["headers"]["task"] == "runs.execute"
    assert msgs[0]["headers"]["id"] == f"run-{run['id']}-attempt-1"
    with factory() as s:
        stored = s.get(Run, run["id"])
        assert stored is not None and stored.dispatched is True
    assert dispatcher.dispatch_once() == 0  # never sent twice


def test_gpu_runs_go_to_the_gpu_queue(api: Api, throwaway_redis: RedisProcess) -> None:
    throwaway_redis.start()
    settings = api.settings.model_copy(update={"broker_url": f"redis://127.0.0.1:{throwaway_redis.port}/0"})
    dispatcher = Dispatcher(settings, session_factory(get_engine(settings.database_url)))
    api.submit({"resources": {"gpus": 1}})
    api.submit({})
    assert dispatcher.dispatch_once() == 2
    assert len(_queued_messages(throwaway_redis.port, "gpu")) == 1
    assert len(_queued_messages(throwaway_redis.port, "cpu")) == 1
