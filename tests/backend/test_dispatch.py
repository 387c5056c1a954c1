"""The outbox: runs are committed queued first, sent when the broker is reachable, retried while it is not."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from sqlalchemy import update

from backend.db import get_engine, session_factory, utcnow
from backend.models import Run
from backend.runs.dispatch import Dispatcher
from common.broker import PRIORITIES, redis_queue_keys
from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)


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
    """The messages of ``queue``, in the order workers take them: kombu keeps one list per priority step
    (LPUSH to send, BRPOP from the right to take)."""
    client = redis.Redis(port=port)
    return [json.loads(m) for key in redis_queue_keys(queue) for m in reversed(client.lrange(key, 0, -1))]


@pytest.mark.heavy
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


class _Recorder:
    """Stands for the dispatcher's Celery app: records what would be sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, int | None]] = []

    def send_task(self, name: str, args: list[int], **options: Any) -> None:
        self.sent.append((args[0], options.get("priority")))


def test_the_dispatcher_sends_the_highest_priority_first_then_the_oldest(api: Api) -> None:
    """Runs waiting together (the broker was down, a burst of submissions) go out by priority, then age;
    each message carries its run's priority. Runs stored before ``resources.priority`` existed are normal."""
    factory = session_factory(get_engine(api.settings.database_url))
    ids: dict[str, list[int]] = {"high": [], "normal": [], "low": []}
    for level in ("normal", "low", "high", None, "normal", "high", "low", None):
        spec = {} if level is None else {"resources": {"priority": level}}
        response = api.submit(spec)
        assert response.status_code == 201, response.text
        ids[level or "normal"].append(response.json()["runs"][0]["id"])
    with factory() as s:  # a run stored before the field existed
        old = ids["normal"][-1]
        stored = s.get(Run, old)
        assert stored is not None
        stored.spec = {k: v for k, v in stored.spec.items() if k != "resources"}
        s.commit()
    recorder = _Recorder()
    assert Dispatcher(api.settings, factory, celery=recorder).dispatch_once() == 8  # type: ignore[arg-type]
    assert recorder.sent == [
        (i, PRIORITIES[level]) for level in ("high", "normal", "low") for i in ids[level]
    ]
    assert (
        PRIORITIES["high"] < PRIORITIES["normal"] < PRIORITIES["low"]
    )  # lower is taken first (Redis's rule)


# A worker that takes a message (not acknowledged: acks_late) and is killed with -9: no ack, no clean
# close (kombu would put the message back on its queue at a clean close).
_TAKE_AND_DIE = """
import os, sys
from kombu import Connection, Exchange, Queue
conn = Connection(sys.argv[1])
queue = Queue("cpu", Exchange("cpu", type="direct"), routing_key="cpu")(conn.default_channel)
print(queue.get(no_ack=False).headers["id"], flush=True)
os._exit(0)
"""


def _take_and_die(broker_url: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", _TAKE_AND_DIE, broker_url], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def _unacked(port: int) -> list[str]:
    client = redis.Redis(port=port)
    assert client.hlen("unacked") == client.zcard("unacked_index")
    return sorted(json.loads(raw)[0]["headers"]["id"] for raw in client.hvals("unacked"))


def _lose_worker(api: Api, factory: Any, run_id: int, attempt: int) -> None:
    """The worker claimed the attempt, then went silent: its heartbeat is long stale."""
    claim = api.client.post(
        f"/api/v1/runs/{run_id}/claim", json={"attempt": attempt, "worker": "w:1"}, headers=api.worker
    )
    assert claim.status_code == 200, claim.text
    with factory() as s:
        s.execute(update(Run).where(Run.id == run_id).values(heartbeat_at=utcnow() - timedelta(minutes=5)))
        s.commit()


def test_a_lost_attempts_message_leaves_the_broker_when_the_run_is_requeued(
    api: Api, throwaway_redis: RedisProcess
) -> None:
    throwaway_redis.start()
    url = f"redis://127.0.0.1:{throwaway_redis.port}/0"
    settings = api.settings.model_copy(update={"broker_url": url})
    factory = session_factory(get_engine(settings.database_url))
    dispatcher = Dispatcher(settings, factory)
    lost, busy = (api.submit({}).json()["runs"][0]["id"] for _ in range(2))
    assert dispatcher.dispatch_once() == 2
    assert _take_and_die(url) == f"run-{lost}-attempt-1"
    assert _take_and_die(url) == f"run-{busy}-attempt-1"  # stands for a message a live worker holds
    assert _unacked(throwaway_redis.port) == sorted([f"run-{lost}-attempt-1", f"run-{busy}-attempt-1"])

    _lose_worker(api, factory, lost, 1)
    assert dispatcher.reap_once() == [(lost, "requeued")]
    assert dispatcher.dispatch_once() == 1
    # the lost attempt's message is gone (Redis would hand it out again after the visibility timeout);
    # the new attempt's message waits on the queue, and another run's message is untouched
    assert _unacked(throwaway_redis.port) == [f"run-{busy}-attempt-1"]
    assert [m["headers"]["id"] for m in _queued_messages(throwaway_redis.port, "cpu")] == [
        f"run-{lost}-attempt-2"
    ]


def test_a_lost_last_attempts_message_leaves_the_broker_when_the_run_fails(
    api: Api, throwaway_redis: RedisProcess
) -> None:
    throwaway_redis.start()
    url = f"redis://127.0.0.1:{throwaway_redis.port}/0"
    settings = api.settings.model_copy(update={"broker_url": url})
    factory = session_factory(get_engine(settings.database_url))
    dispatcher = Dispatcher(settings, factory)
    run_id = api.submit({}).json()["runs"][0]["id"]
    with factory() as s:
        s.execute(update(Run).where(Run.id == run_id).values(max_attempts=1))
        s.commit()
    assert dispatcher.dispatch_once() == 1
    assert _take_and_die(url) == f"run-{run_id}-attempt-1"
    _lose_worker(api, factory, run_id, 1)
    assert dispatcher.reap_once() == [(run_id, "failed")]
    assert _unacked(throwaway_redis.port) == []
