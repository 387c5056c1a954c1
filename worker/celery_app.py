"""The Celery app of ReasonLab's workers, configured from ``common.settings.SharedSettings``.

Runs are long (minutes to days) and each one owns a GPU, so the settings are the long-job ones
(DESIGN.md, Modes):

- ``worker_prefetch_multiplier=1``: a worker reserves one message at a time, so a queued run waits for
  the next free worker instead of sitting behind a busy one.
- ``task_acks_late=True`` + ``task_reject_on_worker_lost=True``: a message is acknowledged after the run,
  and a job process that dies returns its message to the queue (the claim makes the redelivery safe: it
  gets 409 while the attempt is still ``running``; the backend's reaper then requeues the run as attempt
  + 1 and re-dispatches it).
- broker ``visibility_timeout`` longer than the longest run (Redis): an unacknowledged message of a
  running job is not redelivered to a second worker while the first is still working.
- pool ``prefork``, ``worker_concurrency=1``, ``worker_max_tasks_per_child=1``: every run gets a fresh
  pool process, which claims it with the worker token and hands it to a fresh job process forked by the
  worker's job server (``worker.runtime.zygote``): a process that never held a credential and never
  touched CUDA, so CUDA is never forked and GPU memory is fully returned between runs. (The ``solo`` pool
  would run jobs in the worker process itself, which holds the worker token.) The job process exits when
  its job server or its pool process does, and they when the worker dies, so a ``kill -9`` of the worker
  leaves no orphan heartbeating the run: the reaper hands it to the next worker.
- no result backend: results travel through the REST API, not Celery.

The filesystem broker (embedded mode) keeps messages under ``settings.broker_folder``; it removes a
message when a worker takes it (no visibility timeout), so there a lost worker's run is recovered by
the backend's reaper alone. It is kombu's, with ``common.broker``'s message names and order of delivery
(``common.transport.FilesystemTransport``, which the dispatcher sends with): the highest priority first, then
the oldest. On Redis kombu keeps one list per priority step (``common.broker.broker_options``).
"""

from __future__ import annotations

from queue import Empty
from time import monotonic, sleep
from typing import Any

from celery import Celery
from celery.worker import state as worker_state
from kombu import Exchange, Queue

# the dispatcher (backend) and the workers share common.broker's options, so the filesystem broker's
# folders and the visibility timeout always agree on both sides
from common.broker import (
    QUEUES,
    TASK_EXECUTE,
    broker_options,
    is_filesystem,
)
from common.settings import SharedSettings, get_settings
from common.transport import FilesystemTransport
from worker.jobs.pool import POOL

__all__ = [
    "QUEUES",
    "TASK_EXECUTE",
    "FilesystemTransport",
    "WorkerFilesystemTransport",
    "app",
    "celery_config",
    "create_celery_app",
]


def _stopping() -> bool:
    """A warm or cold shutdown was asked of this worker: Celery's own flags, set by its signal handlers to
    the exit code (0 for a warm shutdown, hence ``is``, as ``celery.worker.state.maybe_shutdown`` tests)."""
    flags = (worker_state.should_stop, worker_state.should_terminate)
    return any(flag is not None and flag is not False for flag in flags)


class WorkerFilesystemTransport(FilesystemTransport):
    """The filesystem broker on the worker's side: it stops polling once the worker is asked to stop.

    Without an event loop Celery waits for messages in ``drain_events(timeout=2.0)``, which kombu's
    polling transports sleep through until the timeout, and checks its shutdown flag only between two
    such waits, then waits once more (``celery.worker.loops.synloop`` drains in a ``finally``): an idle
    worker took 3-4 s to notice a warm shutdown, 5.6 s to exit in all. Here the wait ends at the next
    poll after the flag is set, and the last wait at once, taking no message. It polls every 0.25 s
    (kombu's 1 s): a message waits less for an idle worker, and a shutdown less for the poll; a poll is one
    listing of the broker's folder."""

    polling_interval = 0.25

    def drain_events(self, connection: Any, timeout: Any = None, **_: Any) -> Any:
        assert self.cycle is not None  # made with the transport
        started, get = monotonic(), self.cycle.get
        interval = min(self.polling_interval, timeout) if timeout else self.polling_interval
        while not _stopping():
            try:
                get(self._deliver, timeout=timeout)
                return
            except Empty:
                if timeout is not None and monotonic() - started >= timeout:
                    break
                sleep(interval)
        raise TimeoutError()  # socket.timeout, as kombu raises it


def celery_config(settings: SharedSettings) -> dict[str, Any]:
    return {
        "broker_url": settings.broker_url,
        "broker_transport": WorkerFilesystemTransport if is_filesystem(settings.broker_url) else None,
        "broker_transport_options": broker_options(settings),
        "broker_connection_retry_on_startup": True,
        "result_backend": None,
        "task_ignore_result": True,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "task_acks_on_failure_or_timeout": True,
        "worker_prefetch_multiplier": 1,
        # the longest the worker's timer thread sleeps: a warm shutdown waits for it (1.0 s by default)
        "worker_timer_precision": 0.2,
        "worker_concurrency": 1,
        "worker_pool": POOL,  # prefork, with a prompt respawn of the job process (worker/jobs/pool.py)
        "worker_max_tasks_per_child": 1,
        # On a broker connection loss the running job goes on; its message is redelivered only after the
        # visibility timeout and then refused by the claim.
        "worker_cancel_long_running_tasks_on_connection_loss": False,
        # one direct exchange per queue, as Celery makes for send_task(queue=...) on the dispatcher's side
        "task_queues": [Queue(name, Exchange(name, type="direct"), routing_key=name) for name in QUEUES],
        "task_default_queue": "cpu",
        "task_create_missing_queues": False,
        "task_serializer": "json",
        "accept_content": ["json"],
        "worker_hijack_root_logger": True,
        "worker_send_task_events": False,
        "timezone": "UTC",
    }


def create_celery_app(settings: SharedSettings | None = None) -> Celery:
    """The app; its configuration (and the filesystem broker's folders) is built when first read, so
    importing this module has no side effect and honours REASONLAB_* set before the worker starts."""
    app = Celery("reasonlab", include=["worker.tasks"])
    app.add_defaults(lambda: celery_config(settings or get_settings()))
    return app


def worker_argv(
    queues: list[str] | None = None, *, loglevel: str = "INFO", hostname: str | None = None
) -> list[str]:
    """Arguments of ``app.worker_main`` for one job slot (used by ``reasonlab worker`` and ``up``)."""
    chosen = queues or list(QUEUES)
    unknown = sorted(set(chosen) - set(QUEUES))
    if unknown:
        raise ValueError(f"unknown queue(s) {unknown}; queues are {list(QUEUES)}")
    argv = [
        "worker",
        f"--queues={','.join(chosen)}",
        f"--loglevel={loglevel}",
        "--concurrency=1",
    ]
    if hostname:
        argv.append(f"--hostname={hostname}")
    return argv


app = create_celery_app()
