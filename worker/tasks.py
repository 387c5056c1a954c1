"""Celery tasks. ``runs.execute(run_id, attempt)`` runs one attempt of one run (worker.executor).

Messages carry ids only; the run is re-read from the API by the claim. The task is idempotent: a second
delivery of the same message, or a stale attempt, is refused by the claim and returns without running.
"""

from __future__ import annotations

import contextlib
import importlib
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
from worker.kinds import get_kind, kind_names
from worker.pool import job_pids, keep_own_handler

logger = logging.getLogger(__name__)


@worker_init.connect
def _preload(**_: Any) -> None:
    """Import every kind in the worker's parent process, so each fresh job process is forked with them
    loaded and claims its run within milliseconds. Imports only: no torch op runs here, so neither CUDA
    nor an OpenMP thread pool exists before the fork. (MLflow is not loaded: the API mirrors runs to it.)"""
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request drowns the run's logs
    # The worker only sends the interrupt. Blocked here (before the pool's threads exist, which inherit
    # the mask), it stays pending in a job process forked just as the shutdown begins, until that one
    # has installed its handler: neither lost nor the default action's death.
    signal.pthread_sigmask(signal.SIG_BLOCK, {executor.INTERRUPT_SIGNAL})
    if not get_settings().worker_preload:  # REASONLAB_WORKER_PRELOAD=false: each job process imports its kind
        return
    # torch._dynamo: torch.optim imports it at the first optimiser built (~3 s per process otherwise)
    for module in ("torch._dynamo",):
        try:
            importlib.import_module(module)
        except Exception as exc:
            logger.warning("preload of %s failed: %s", module, exc)
    for name in kind_names():
        try:
            get_kind(name)
        except Exception as exc:  # a broken kind fails its own runs, not the worker
            logger.warning("preload of kind %s failed: %s", name, exc)


keep_own_handler(executor.INTERRUPT_SIGNAL)  # billiard's threaded pool would reset it to its exit handler


@worker_process_init.connect
def _note_interrupt_until_a_run(**_: Any) -> None:
    """An idle job process notes the shutdown signal (it starts no run from then on); a running one
    checkpoints and gives its run back (the executor's handler)."""
    signal.signal(executor.INTERRUPT_SIGNAL, executor.note_shutdown)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {executor.INTERRUPT_SIGNAL})  # blocked by the worker


@worker_shutting_down.connect
def _interrupt_running_jobs(**_: Any) -> None:
    """Warm shutdown (SIGTERM: docker stop, Ctrl-C of `reasonlab up`): ask every job process to
    checkpoint, stop and give its run back to the queue, so the run resumes elsewhere without losing an
    attempt, instead of being killed at the end of the grace period. Every one, whichever thread of this
    process forked it (``job_pids``)."""
    executor.note_shutdown()  # a job process forked from now on inherits it: it starts no run
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
