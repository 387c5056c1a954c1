"""Celery tasks. ``runs.execute(run_id, attempt)`` runs one attempt of one run (worker.executor).

Messages carry ids only; the run is re-read from the API by the claim. The task is idempotent: a second
delivery of the same message, or a stale attempt, is refused by the claim and returns without running.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from typing import Any

from billiard.process import current_process
from celery import Task
from celery.exceptions import Reject
from celery.signals import worker_init, worker_process_init, worker_shutting_down

from common.settings import get_settings
from reasonlab_sdk.client import ApiUnavailable, Forbidden, Unauthorized
from worker import executor
from worker.celery_app import TASK_EXECUTE, app
from worker.jobs.pool import job_pids, keep_own_handler
from worker.runtime import zygote
from worker.runtime.environment import make_undumpable

logger = logging.getLogger(__name__)


def _block_interrupt() -> None:
    """The worker only sends the interrupt. Blocked at its start (before the pool's threads exist, which
    inherit the mask, and before the job server, which keeps it across its exec), it stays pending in a
    process started just as the shutdown begins until that one has installed its handler: neither lost
    nor the default action's death."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {executor.INTERRUPT_SIGNAL})


@worker_init.connect
def _start_job_server(sender: Any = None, **_: Any) -> None:
    """Start the job server (worker/runtime/zygote.py), before any pool process is forked: every run's code
    runs in a process forked from it, which never held the worker token; it imports every kind once
    (``worker.jobs.server.preload``), so a job process starts its kind within milliseconds. This process
    and its pool processes import no kind."""
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request drowns the run's logs
    # undumpable already when started by `reasonlab worker` (environment.unseal); started by Celery's own
    # command, from here on: no process of its user reads its memory or its pool processes'
    make_undumpable()
    _block_interrupt()
    level = getattr(sender, "loglevel", logging.INFO)
    zygote.start(level if isinstance(level, int) else logging.INFO)


keep_own_handler(executor.INTERRUPT_SIGNAL)  # billiard's threaded pool would reset it to its exit handler


@worker_process_init.connect
def _note_interrupt_until_a_run(**_: Any) -> None:
    """An idle pool process notes the shutdown signal (it starts no run from then on); a busy one passes
    it on to its run's job process, which checkpoints and gives the run back (the executor's handlers)."""
    signal.signal(executor.INTERRUPT_SIGNAL, executor.note_shutdown)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {executor.INTERRUPT_SIGNAL})  # blocked by the worker


@worker_shutting_down.connect
def _interrupt_running_jobs(**_: Any) -> None:
    """Warm shutdown (SIGTERM: docker stop, Ctrl-C of `reasonlab up`): ask every job process to
    checkpoint, stop and give its run back to the queue, so the run resumes elsewhere without losing an
    attempt, instead of being killed at the end of the grace period. Every child, whichever thread of this
    process forked it (``job_pids``): each pool process passes it on to its run's job process, and the job
    server notes it (a job process it forks from then on gives its run back at once)."""
    executor.note_shutdown()  # a pool process forked from now on inherits it: it starts no run
    for pid in sorted(job_pids()):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, executor.INTERRUPT_SIGNAL)


CLAIM_RETRY_COUNTDOWN = 30  # seconds between task retries while the API cannot be reached to claim


@app.task(name=TASK_EXECUTE, bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def execute(self: Task, run_id: int, attempt: int | None = None) -> str:
    # In a prefork child the job must die with the worker (no orphan heartbeating a reaped run).
    in_pool_child = current_process().name != "MainProcess"
    if executor.shutting_down():
        # A worker in warm shutdown may still take one more message (the next attempt of the run it just
        # gave back, say): hand it back unclaimed for the next worker instead of starting the run here.
        logger.info("run %s attempt %s: this worker is shutting down; message requeued", run_id, attempt)
        raise Reject("worker shutting down", requeue=True)
    try:
        return executor.execute(run_id, attempt, get_settings(), exit_with_parent=in_pool_child)
    except (Unauthorized, Forbidden) as exc:
        # This worker's token is refused: hand the message back for a worker the API trusts, instead of
        # consuming it (the run would wait for the re-send timeout).
        logger.error("run %s: the API refuses this worker's token (%s); message requeued", run_id, exc)
        raise Reject(str(exc), requeue=True) from exc
    except ApiUnavailable as exc:
        # Nothing ran (the claim never got through): try the whole task again later.
        logger.warning(
            "run %s: API unreachable at claim; task retried in %d s", run_id, CLAIM_RETRY_COUNTDOWN
        )
        raise self.retry(exc=exc, countdown=CLAIM_RETRY_COUNTDOWN, max_retries=None) from exc
