"""The Celery app carries the long-job settings of DESIGN.md and registers ``runs.execute``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery.concurrency.prefork import TaskPool
from celery.worker import state as worker_state
from kombu import Connection, Consumer, Exchange, Queue
from kombu.transport.virtual import BrokerState
from kombu.utils.imports import symbol_by_name

from common.broker import broker_options
from common.settings import SharedSettings
from worker import celery_app
from worker.celery_app import TASK_EXECUTE, WorkerFilesystemTransport, create_celery_app, worker_argv
from worker.jobs.pool import MAX_RECHECKS, PromptRespawnAsynPool


def test_long_job_settings(tmp_path: Path) -> None:
    conf = create_celery_app(SharedSettings(home=tmp_path, broker_url="redis://127.0.0.1:6379/0")).conf
    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1
    assert conf.worker_max_tasks_per_child == 1
    assert conf.worker_concurrency == 1
    assert conf.worker_timer_precision <= 0.2  # a warm shutdown waits for the timer thread's sleep
    pool = symbol_by_name(conf.worker_pool)
    assert issubclass(pool, TaskPool) and pool.Pool is PromptRespawnAsynPool  # prefork, one child per run
    assert conf.task_ignore_result is True
    assert conf.result_backend is None
    assert sorted(q.name for q in conf.task_queues) == ["cpu", "gpu"]
    assert conf.broker_url == "redis://127.0.0.1:6379/0"
    assert conf.broker_transport_options["visibility_timeout"] >= 7 * 24 * 3600
    assert "data_folder_in" not in conf.broker_transport_options


def test_filesystem_broker_uses_one_folder_under_home(tmp_path: Path) -> None:
    settings = SharedSettings(home=tmp_path)
    options = create_celery_app(settings).conf.broker_transport_options
    folder = settings.broker_folder
    assert options == {
        **broker_options(settings),
        "control_folder": str(folder / "control"),
    }  # as the dispatcher's
    assert options["data_folder_in"] == options["data_folder_out"]
    assert Path(options["data_folder_in"]).is_relative_to(folder)
    assert Path(options["control_folder"]).is_relative_to(folder)  # not ./control of the cwd
    for key in ("data_folder_in", "processed_folder", "control_folder"):
        assert Path(options[key]).is_dir()


def test_each_queue_has_its_own_routing_key(tmp_path: Path) -> None:
    conf = create_celery_app(SharedSettings(home=tmp_path)).conf
    assert {(q.name, q.exchange.name, q.routing_key) for q in conf.task_queues} == {
        ("cpu", "cpu", "cpu"),
        ("gpu", "gpu", "gpu"),
    }


def test_task_is_registered_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REASONLAB_HOME", str(tmp_path))
    from worker import tasks

    assert tasks.execute.name == TASK_EXECUTE
    assert TASK_EXECUTE in tasks.app.tasks
    assert tasks.execute.acks_late is True


def test_task_calls_the_executor_with_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    from worker import executor, tasks

    calls: list[tuple[int, int | None, bool]] = []

    def fake_execute(
        run_id: int, attempt: int | None, settings: SharedSettings, *, exit_with_parent: bool
    ) -> str:
        calls.append((run_id, attempt, exit_with_parent))
        return "succeeded"

    monkeypatch.setattr(executor, "execute", fake_execute)
    assert tasks.execute.apply(args=(4, 2)).get() == "succeeded"
    assert calls == [(4, 2, False)]  # in the main process: no parent to die with


def test_worker_argv_refuses_unknown_queues() -> None:
    assert "--queues=gpu" in worker_argv(["gpu"])
    with pytest.raises(ValueError, match="unknown queue"):
        worker_argv(["tpu"])


def test_task_retries_when_the_claim_cannot_get_through(monkeypatch: pytest.MonkeyPatch) -> None:
    from celery.exceptions import Retry

    from reasonlab_sdk.client import ApiUnavailable
    from worker import executor, tasks

    def unreachable(
        run_id: int, attempt: int | None, settings: SharedSettings, *, exit_with_parent: bool
    ) -> str:
        raise ApiUnavailable("connection refused")

    retries: list[tuple[str, int, int | None]] = []

    def fake_retry(*, exc: Exception, countdown: int, max_retries: int | None) -> Retry:
        retries.append((type(exc).__name__, countdown, max_retries))
        return Retry("retry later", exc)

    monkeypatch.setattr(executor, "execute", unreachable)
    monkeypatch.setattr(tasks.execute, "retry", fake_retry)
    tasks.execute.apply(args=(4, 2))
    assert retries == [("ApiUnavailable", tasks.CLAIM_RETRY_COUNTDOWN, None)]  # re-sent, never dropped


def test_a_worker_shutting_down_hands_a_new_message_back_unclaimed(monkeypatch: pytest.MonkeyPatch) -> None:
    """In warm shutdown a worker may still take one more message (the next attempt of the run it just gave
    back): the job process, told by the shutdown signal (or forked after it), requeues it unclaimed."""
    import os
    import signal

    from celery.exceptions import Reject

    from worker import executor, tasks

    calls: list[int] = []
    monkeypatch.setattr(executor, "execute", lambda run_id, *a, **k: calls.append(run_id) or "succeeded")
    monkeypatch.setattr(executor, "_shutting_down", False)
    tasks._note_interrupt_until_a_run()  # what a fresh job process installs
    try:
        os.kill(os.getpid(), executor.INTERRUPT_SIGNAL)  # the worker's shutdown reaches the idle process
        assert executor.shutting_down()
        result = tasks.execute.apply(args=(4, 2))
        assert isinstance(result.result, Reject) and result.result.requeue is True
        assert calls == []  # nothing claimed, nothing run
    finally:
        signal.signal(executor.INTERRUPT_SIGNAL, signal.SIG_DFL)


class _Hub:
    def __init__(self) -> None:
        self.calls: list[tuple[float, object, tuple[object, ...]]] = []

    def call_later(self, delay: float, fn: object, *args: object) -> None:
        self.calls.append((delay, fn, args))

    def run_pending(self) -> None:
        calls, self.calls = self.calls, []
        for _, fn, args in calls:
            fn(*args)  # type: ignore[operator]


class _Proc:
    exitcode: int | None = None


def _pool() -> tuple[PromptRespawnAsynPool, list[int]]:
    pool = PromptRespawnAsynPool.__new__(PromptRespawnAsynPool)
    maintained: list[int] = []
    pool._untrack_child_process = lambda proc, hub: None  # type: ignore[method-assign]
    pool.maintain_pool = lambda: maintained.append(1)  # type: ignore[method-assign]
    return pool, maintained


def test_child_exit_not_yet_reapable_is_rechecked_until_it_is() -> None:
    pool, maintained = _pool()
    hub, proc = _Hub(), _Proc()
    pool._event_process_exit(hub, proc)
    assert maintained == [1] and len(hub.calls) == 1  # celery's own attempt found nothing to replace
    hub.run_pending()
    assert maintained == [1] and len(hub.calls) == 1  # still not reapable: check again shortly
    proc.exitcode = 0
    hub.run_pending()
    assert maintained == [1, 1] and hub.calls == []  # reapable: the replacement is forked at once


def test_reapable_exit_needs_no_recheck_and_rechecks_are_bounded() -> None:
    pool, maintained = _pool()
    hub, proc = _Hub(), _Proc()
    proc.exitcode = 0
    pool._event_process_exit(hub, proc)
    assert maintained == [1] and hub.calls == []
    proc.exitcode = None
    pool._event_process_exit(hub, proc)
    for _ in range(MAX_RECHECKS + 5):
        hub.run_pending()
    assert hub.calls == [] and maintained[-1] == 1 and len(maintained) == 3


def _cpu() -> Queue:
    return Queue("cpu", Exchange("cpu", type="direct"), routing_key="cpu")


@pytest.fixture
def filesystem_consumer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Connection, list[Any]]]:
    """A worker's connection to an empty filesystem broker, consuming the cpu queue into a list. kombu's
    filesystem transport keeps its bindings in a class attribute, one per process: this broker's own."""
    monkeypatch.setattr(WorkerFilesystemTransport, "global_state", BrokerState())
    got: list[Any] = []
    with create_celery_app(SharedSettings(home=tmp_path)).connection_for_read() as conn:
        assert isinstance(conn.transport, WorkerFilesystemTransport)
        Consumer(
            conn.default_channel, queues=[_cpu()], callbacks=[lambda body, _: got.append(body)]
        ).consume()
        yield conn, got


@pytest.mark.parametrize(("flag", "code"), [("should_stop", 0), ("should_stop", 1), ("should_terminate", 0)])
def test_the_filesystem_broker_stops_polling_at_the_next_poll_after_a_shutdown_is_asked(
    filesystem_consumer: tuple[Connection, list[Any]], monkeypatch: pytest.MonkeyPatch, flag: str, code: int
) -> None:
    """Celery's synloop drains for 2 s between two looks at its shutdown flag, and once more after it
    (kombu's polling transports sleep until the timeout): the worker's transport looks at the flag
    itself between its polls. A warm shutdown's flag is 0 (its exit code): set, though falsy."""
    conn, _ = filesystem_consumer
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 2:  # the signal arrives during the second poll's wait
            monkeypatch.setattr(worker_state, flag, code)
        assert len(sleeps) < 10, "still polling after the shutdown was asked"

    monkeypatch.setattr(celery_app, "sleep", sleep)
    with pytest.raises(TimeoutError):
        conn.drain_events(timeout=3600)
    assert len(sleeps) == 2  # not the hour of polls that kombu's own transport would sleep through
    # the synloop's last drain, after the flag: no poll at all, so no message is taken while stopping
    sleeps.clear()
    with pytest.raises(TimeoutError):
        conn.drain_events(timeout=2.0)
    assert sleeps == []


def test_the_filesystem_broker_still_delivers_and_times_out_without_a_shutdown(
    filesystem_consumer: tuple[Connection, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    conn, got = filesystem_consumer
    clock = iter(range(100))
    monkeypatch.setattr(celery_app, "monotonic", lambda: float(next(clock)))
    monkeypatch.setattr(celery_app, "sleep", lambda _: None)
    with pytest.raises(TimeoutError):  # nothing queued: the timeout, as kombu's own
        conn.drain_events(timeout=2.0)
    cpu = _cpu()
    conn.Producer().publish({"run": 1}, exchange=cpu.exchange, routing_key="cpu", declare=[cpu])
    conn.drain_events(timeout=2.0)
    assert got == [{"run": 1}]
