"""Celery tasks. ``runs.execute(run_id, attempt)`` runs one attempt of one run (worker.executor).

Messages carry ids only; the run is re-read from the API by the claim. The task is idempotent: a second
delivery of the same message, or a stale attempt, is refused by the claim and returns without running.
"""

from __future__ import annotations

import logging

from billiard.process import current_process
from celery import Task

from backend.settings import get_settings
from worker import executor
from worker.celery_app import TASK_EXECUTE, app
from worker.client import ApiUnavailable

logger = logging.getLogger(__name__)

CLAIM_RETRY_COUNTDOWN = 30  # seconds between task retries while the API cannot be reached to claim


@app.task(name=TASK_EXECUTE, bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def execute(self: Task, run_id: int, attempt: int | None = None) -> str:
    # In a prefork child the job must die with the worker (no orphan heartbeating a reaped run).
    in_pool_child = current_process().name != "MainProcess"
    try:
        return executor.execute(run_id, attempt, get_settings(), exit_with_parent=in_pool_child)
    except ApiUnavailable as exc:
        # Nothing ran (the claim never got through): try the whole task again later.
        logger.warning(
            "run %s: API unreachable at claim; task retried in %d s", run_id, CLAIM_RETRY_COUNTDOWN
        )
        raise self.retry(exc=exc, countdown=CLAIM_RETRY_COUNTDOWN, max_retries=None) from exc
