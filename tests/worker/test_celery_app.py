"""The Celery app carries the long-job settings of DESIGN.md and registers ``runs.execute``."""

from __future__ import annotations

from pathlib import Path

import pytest
from celery.concurrency.prefork import TaskPool
from kombu.utils.imports import symbol_by_name

from common.broker import broker_options
from common.settings import SharedSettings
from worker.celery_app import TASK_EXECUTE, create_celery_app, worker_argv
from worker.pool import MAX_RECHECKS, PromptRespawnAsynPool


def test_long_job_settings(tmp_path: Path) -> None:
    conf = create_celery_app(SharedSettings(home=tmp_path, broker_url="redis://127.0.0.1:6379/0")).conf
    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1
    assert conf.worker_max_tasks_per_child == 1
    assert conf.worker_concurrency == 1
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
