"""Queue order: a free worker takes the queued run of the highest priority first and,
within a priority, the oldest first, on the embedded filesystem broker and on Redis.

kombu's filesystem broker named a message ``<monotonic ms>_<uuid>`` and delivered the names in text order:
once the sender's uptime passed 10^6 ms (16.7 minutes, again at 2.8 h and 27.8 h) a new message sorted
before the older ones. The clock is faked here across that boundary. Messages are sent by the
dispatcher's Celery app (``backend``) and taken by a consumer built from the workers' app
(``worker.celery_app``), as a worker takes them: one at a time, acknowledged before the next.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kombu.transport.filesystem
import pytest
from kombu import Consumer

import common.broker
from backend.db import get_engine, session_factory
from backend.runs.dispatch import Dispatcher
from backend.settings import Settings
from common.broker import delivery_order, message_name, take_message, write_message
from common.settings import SharedSettings
from tests.backend.conftest import Api
from tests.backend.test_dispatch import RedisProcess, _free_port
from worker.celery_app import create_celery_app

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)


def _take_all(settings: SharedSettings, queue: str = "cpu") -> list[str]:
    """Task ids in the order a worker of ``queue`` takes them (prefetch 1, acknowledged one by one)."""
    app = create_celery_app(settings)
    (declared,) = [q for q in app.conf.task_queues if q.name == queue]
    taken: list[str] = []

    def on_message(body: object, message: Any) -> None:
        taken.append(message.headers["id"])
        message.ack()

    with (
        app.connection_for_read() as conn,
        Consumer(conn, [declared], callbacks=[on_message], prefetch_count=1),
    ):
        while True:
            try:
                conn.drain_events(timeout=2)
            except TimeoutError:
                return taken


def _fake_clocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both clocks a message name could come from cross a power of ten during the test: kombu's
    monotonic seconds (999.990 s, +5 ms a message: the third message is sent at 10^6 ms) and the wall
    clock of ``common.broker`` (nanoseconds, which gain a digit at the third message too)."""
    ticks = iter(range(10**6))
    monkeypatch.setattr(kombu.transport.filesystem, "monotonic", lambda: 999.990 + 0.005 * next(ticks))
    ns = iter(range(10**6))
    monkeypatch.setattr(common.broker, "clock_ns", lambda: 10**9 - 10 + 5 * next(ns), raising=False)
    monkeypatch.setattr(common.broker, "_last_sequence", 0, raising=False)


@pytest.mark.heavy
def test_filesystem_broker_is_first_in_first_out_across_the_uptime_boundary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_clocks(monkeypatch)
    settings = Settings(home=tmp_path)
    dispatcher = Dispatcher(settings, session_factory(get_engine(settings.database_url)))
    sent = []
    for run_id in range(1, 13):  # a dozen runs queued one after the other, at the same priority
        dispatcher._send(run_id, 1, "cpu")
        sent.append(f"run-{run_id}-attempt-1")
    assert _take_all(SharedSettings(home=tmp_path)) == sent


def _submit(api: Api, priority: str | None) -> int:
    spec = {} if priority is None else {"resources": {"priority": priority}}
    response = api.submit(spec)
    assert response.status_code == 201, response.text
    return int(response.json()["runs"][0]["id"])


@pytest.fixture(params=["filesystem", "redis"])
def brokers(
    request: pytest.FixtureRequest, api: Api, tmp_path: Path
) -> Iterator[tuple[Settings, SharedSettings]]:
    """The dispatcher's settings and a worker's: the embedded filesystem broker, or a redis-server of the
    test's own on a free port (the machine's Redis stays untouched)."""
    if request.param == "filesystem":
        yield api.settings, SharedSettings(home=api.settings.home)
        return
    server = RedisProcess(_free_port(), tmp_path)
    server.start()
    url = f"redis://127.0.0.1:{server.port}/0"
    try:
        yield (
            api.settings.model_copy(update={"broker_url": url}),
            SharedSettings(home=tmp_path, broker_url=url),
        )
    finally:
        server.stop()


@pytest.mark.heavy
def test_the_highest_priority_first_then_the_oldest(
    api: Api, brokers: tuple[Settings, SharedSettings], monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_clocks(monkeypatch)
    settings, worker_settings = brokers
    dispatcher = Dispatcher(settings, session_factory(get_engine(settings.database_url)))
    first = [_submit(api, None), _submit(api, "normal"), _submit(api, None)]  # two long demos and one more
    assert dispatcher.dispatch_once() == 3
    # later: a long run that may wait, a quick check, one more normal run, a sweep of seconds-long runs
    low, high, normal, *sweep = (_submit(api, p) for p in ("low", "high", "normal", "high", "high"))
    assert dispatcher.dispatch_once() == 5
    order = [high, *sweep, *first, normal, low]
    assert _take_all(worker_settings) == [f"run-{run_id}-attempt-1" for run_id in order]


@pytest.mark.heavy
def test_a_message_a_worker_sends_again_keeps_its_priority(tmp_path: Path) -> None:
    """A worker re-sends a message (a rejected message back on its queue, a task retry) with the workers'
    transport: it names and orders messages as the dispatcher's does."""
    settings = SharedSettings(home=tmp_path)
    app = create_celery_app(settings)
    for run_id, priority in ((1, 3), (2, 6), (3, 0), (4, 3)):
        app.send_task(
            "runs.execute",
            args=[run_id, 1],
            queue="cpu",
            task_id=f"run-{run_id}-attempt-1",
            priority=priority,
        )
    assert _take_all(settings) == [f"run-{i}-attempt-1" for i in (3, 1, 4, 2)]


def test_message_names_sort_by_priority_then_sequence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common.broker, "clock_ns", lambda: 5)  # a clock that stands still, or steps back
    monkeypatch.setattr(common.broker, "_last_sequence", 0)
    names = [message_name("cpu", p) for p in (3, 3, 0, 9, 3)]
    assert [n.partition(".")[2] for n in names] == [
        "cpu.msg"
    ] * 5  # kombu finds the queue after the first dot
    order = sorted(names, key=delivery_order)
    assert order == sorted(names) == [names[2], names[0], names[1], names[4], names[3]]
    assert message_name("gpu", 42).startswith("9_") and message_name("gpu", -1).startswith("0_")


def test_messages_from_before_an_upgrade_go_first(tmp_path: Path) -> None:
    """Names kombu's own transport made (still in the folder after an upgrade) are older than any new one:
    they go first, by their number (not their text)."""
    for name in ("999990_4a7c.cpu.msg", "1000010_9b1d.cpu.msg", "5_x.gpu.msg"):
        (tmp_path / name).write_bytes(name.encode())
    write_message(tmp_path, "cpu", 0, b"new")
    assert [take_message(tmp_path, "cpu") for _ in range(4)] == [
        b"999990_4a7c.cpu.msg",
        b"1000010_9b1d.cpu.msg",
        b"new",
        None,
    ]
    assert take_message(tmp_path, "gpu") == b"5_x.gpu.msg"
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing half-written or half-taken is left
