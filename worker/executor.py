"""Execute one attempt of one run: claim, heartbeat, RunContext, the kind, flush, finish.

The executor talks to the platform only through the REST API (the backend is the single writer of the
database). The claim makes a task idempotent: a redelivered message, or a stale attempt, gets 409 and
returns without running anything. The heartbeat thread is ``worker.runtime.heartbeat``, the capture of the run's
Python logging ``worker.runtime.logcapture``.

    claim ──> heartbeat thread (progress, cancel, lease) ──> kind.run(spec, ctx)
          ──> ctx.close (flush, retries) ──> finish (succeeded | cancelled | failed + traceback)
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Literal, TypeVar

from common.runs import FinalStatus
from common.settings import SharedSettings
from reasonlab_sdk import api_types as api
from reasonlab_sdk.client import ApiUnavailable, Conflict, NotFound, ReasonLabClient
from worker.kinds import get_kind
from worker.runtime import zygote
from worker.runtime.heartbeat import Heartbeat
from worker.runtime.logcapture import capture_logs
from worker.runtime.sysmetrics import SystemSampler, step_origin
from worker.tracking.artifacts import TransferCancelled
from worker.tracking.context import RunError
from worker.tracking.tracked import ApiRunContext, TrackingError
from worker.tracking.writer import WriterOptions

logger = logging.getLogger(__name__)

Outcome = Literal[FinalStatus, "skipped", "lost", "released"]
# The worker parent sends this to its job process when it shuts down (worker/tasks.py): the run
# checkpoints, stops and is given back to the queue instead of being killed at the end of the grace period.
INTERRUPT_SIGNAL = signal.SIGUSR2
T = TypeVar("T")

# Set in a job process once its worker shuts down (worker/tasks.py: the interrupt signal while idle, or
# inherited from the worker's parent by a job process forked after): it starts no run any more.
_shutting_down = False


def note_shutdown(*_: object) -> None:
    """The worker is shutting down (a signal handler, so a plain flag): a run this process has not started
    yet must not start, and one starting right now gives itself back at once."""
    global _shutting_down
    _shutting_down = True


def shutting_down() -> bool:
    return _shutting_down


CLAIM_DEADLINE = 120.0  # API down at claim time: retry this long, then let the task retry later
FINISH_DEADLINE = 3600.0  # API down at finish time: keep trying this long (the run's work is done)
PATCH_DEADLINE = 60.0


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def worker_token(settings: SharedSettings) -> str | None:
    """REASONLAB_WORKER_TOKEN, or in embedded mode the token ``reasonlab up`` keeps in ``home/worker.token``."""
    if settings.worker_token:
        return settings.worker_token
    path = settings.home / "worker.token"
    return path.read_text().strip() if path.is_file() else None


def call_with_retry(
    call: Callable[[], T],
    *,
    what: str,
    deadline: float,
    initial: float = 0.5,
    maximum: float = 10.0,
) -> T:
    """``call()``, retried with exponential backoff while the API is unavailable, for up to ``deadline``
    seconds; other errors (409, 404, ...) are not transient and propagate at once."""
    end = time.monotonic() + deadline
    delay = initial
    while True:
        try:
            return call()
        except ApiUnavailable as exc:
            if time.monotonic() + delay > end:
                raise
            logger.warning("%s: API unavailable (%s); retrying in %.1f s", what, exc, delay)
            time.sleep(delay)
            delay = min(delay * 2, maximum)


class _AttemptContext(ApiRunContext):
    """The attempt's RunContext, which notes whether the kind saw its stop request: a kind that returns
    after ``should_stop()`` said True stopped early (after a checkpoint, by the contract); one that never
    saw it ran to its end."""

    stop_seen = False

    def should_stop(self) -> bool:
        if super().should_stop():
            self.stop_seen = True
            return True
        return False


def _release(
    api: ReasonLabClient, ctx: ApiRunContext, heartbeat: Heartbeat, run_id: int, attempt: int
) -> Outcome:
    """The kind stopped on the shutdown signal after a checkpoint: persist everything, give the run back."""
    try:
        ctx.close("succeeded", final=False)  # flush; not final: the next attempt goes on
        call_with_retry(lambda: api.release(run_id, attempt), what="release", deadline=PATCH_DEADLINE)
    except (Conflict, NotFound) as exc:
        logger.warning("run %s attempt %s: release refused (%s)", run_id, attempt, exc)
        return "lost"
    except Exception as exc:  # the reaper will requeue it after the heartbeat timeout instead
        logger.error(
            "run %s attempt %s: release failed (%s); the reaper will requeue it", run_id, attempt, exc
        )
        return "lost"
    finally:
        heartbeat.stop()
    logger.info(
        "run %s attempt %s released at worker shutdown: it resumes from its checkpoint", run_id, attempt
    )
    return "released"


def execute(
    run_id: int,
    attempt: int | None,
    settings: SharedSettings,
    *,
    client: ReasonLabClient | None = None,
    exit_with_parent: bool = False,
    writer_options: WriterOptions | None = None,
    worker: str | None = None,
) -> Outcome:
    """Run ``attempt`` of run ``run_id`` to its end and report it; what happened.

    ``exit_with_parent``: this is a Celery pool process, a fork of the worker, whose memory holds the
    worker token: it claims the run, and the run's code runs in a job process of its own that holds the
    run's token alone (``worker.runtime.zygote``), taken before the claim (no claim without a process to
    run it). Otherwise (``reasonlab run``, tests) the run goes on in this process with the run's token.

    ``skipped``: the claim was refused (409/404): another delivery has this attempt, or it is stale.
    ``lost``: the lease was lost mid-run (the reaper gave the run to a new attempt): no finish is sent.
    Raises ApiUnavailable when the API could not be reached to claim, Unauthorized when it refused the
    worker's token (nothing ran in either case: the task retries later).
    """
    worker = worker or worker_name()
    job = zygote.open_job() if exit_with_parent else None
    try:
        run = _claim(run_id, attempt, settings, client, worker)
    except BaseException:
        if job is not None:
            job.abandon()
        raise
    if run is None:
        if job is not None:
            job.abandon()
        return "skipped"
    claimed_attempt = int(run["attempt"])
    logger.info("run %s attempt %s claimed by %s", run_id, claimed_attempt, worker)
    # From here on the attempt works with its own token (its run's routes only, dead with the attempt):
    # nothing the run does can reach another run or a project route with the worker's credentials.
    if job is not None:
        return _run_in_job_process(job, run, claimed_attempt, worker)
    token = run["run_token"]
    run_api = client.with_token(token) if client is not None else ReasonLabClient(settings.api_url, token)
    with run_api:
        return run_claimed(
            run_api, run, claimed_attempt, settings, worker=worker, writer_options=writer_options
        )


def _claim(
    run_id: int, attempt: int | None, settings: SharedSettings, client: ReasonLabClient | None, worker: str
) -> api.ClaimOut | None:
    """The claim with the worker token; None when it is refused (409/404)."""
    api = client or ReasonLabClient(settings.api_url, worker_token(settings))
    try:
        return call_with_retry(
            lambda: api.claim(run_id, attempt, worker), what="claim", deadline=CLAIM_DEADLINE
        )
    except (Conflict, NotFound) as exc:
        logger.info("run %s attempt %s not claimed (%s): nothing to do", run_id, attempt, exc)
        return None
    finally:
        if client is None:
            api.close()


OUTCOMES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled", "skipped", "lost", "released"})


def _run_in_job_process(job: zygote.JobProcess, run: api.ClaimOut, attempt: int, worker: str) -> Outcome:
    """In a pool process: hand the claim to the run's job process, pass the worker's shutdown on to it
    (the interrupt), and wait for its outcome and its exit. A job process that ends without an outcome
    (killed, out of memory) sends no finish: the run is ``lost``, and the reaper hands it on."""
    run_id = int(run["id"])
    try:
        job.hand_over(
            {"run": dict(run), "attempt": attempt, "worker": worker, "shutting_down": _shutting_down}
        )
    except OSError as exc:  # it died since it said it was ready: its wait says so
        logger.error(
            "run %s attempt %s: the claim could not reach its job process (%s)", run_id, attempt, exc
        )
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous_handler = signal.getsignal(INTERRUPT_SIGNAL)
    if in_main_thread:

        def relay(*_: object) -> None:
            note_shutdown()
            job.interrupt(INTERRUPT_SIGNAL)

        signal.signal(INTERRUPT_SIGNAL, relay)
        if _shutting_down:  # the signal came before this handler: the job may not have had it
            job.interrupt(INTERRUPT_SIGNAL)
    try:
        answer = job.wait()
    finally:
        if in_main_thread:
            signal.signal(
                INTERRUPT_SIGNAL, previous_handler if previous_handler is not None else signal.SIG_DFL
            )
    outcome = answer.get("outcome") if isinstance(answer, dict) else None
    if outcome not in OUTCOMES:
        logger.error(
            "run %s attempt %s: its job process %d ended without an outcome; the reaper will hand the run on",
            run_id,
            attempt,
            job.pid,
        )
        return "lost"
    return outcome  # type: ignore[no-any-return]


def run_claimed(
    api: ReasonLabClient,
    run: api.RunPublic,
    attempt: int,
    settings: SharedSettings,
    *,
    worker: str,
    exit_with_parent: bool = False,
    writer_options: WriterOptions | None = None,
) -> Outcome:
    """Run a claimed attempt with ``api``, a client holding the run's own token, and report it.
    ``exit_with_parent``: a job process, which exits when its parent does."""
    run_id = int(run["id"])
    heartbeat = Heartbeat(
        api,
        run_id,
        attempt,
        settings.heartbeat_interval,
        exit_with_parent=exit_with_parent,
        # give up a little before the reaper would hand the run on
        lease_timeout=max(
            settings.heartbeat_timeout - 2 * settings.heartbeat_interval, settings.heartbeat_interval
        ),
        sampler=SystemSampler(step_origin(dict(run))) if settings.system_metrics else None,
    )
    heartbeat.start()
    # only the main thread may install a handler (the job process runs its task there)
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous_handler = signal.getsignal(INTERRUPT_SIGNAL)
    if in_main_thread:
        signal.signal(INTERRUPT_SIGNAL, lambda *_: heartbeat.interrupt())
        if _shutting_down:  # the signal came between the task's check and this handler
            heartbeat.interrupt()
    ctx: _AttemptContext | None = None
    status: FinalStatus = "failed"
    error: str | None = None
    try:
        kind = get_kind(run["kind"])
        spec = kind.spec.model_validate(run["spec"])
        ctx = _AttemptContext(
            api,
            run_id,
            attempt,
            seed=spec.seed,
            device=spec.resources.device,
            artifact_root=Path(settings.artifact_root),
            options=writer_options,
        )
        heartbeat.attach(ctx)
        with capture_logs(ctx):
            try:
                if ctx.stop_reason == "cancel":  # cancelled before the kind began: it never starts
                    logger.info("run %s attempt %s: cancelled before the kind started", run_id, attempt)
                else:
                    logger.info("run %s attempt %s: kind %s on %s", run_id, attempt, run["kind"], ctx.device)
                    kind.run(spec, ctx)
            except TransferCancelled:  # a download of the kind's setup, given up on the cancel
                logger.info("run %s attempt %s: cancelled during the kind's setup", run_id, attempt)
            except RunError as exc:  # the kind explained the failure: its message, no traceback
                error = f"{type(exc).__name__}: {exc}"
                logger.error("run %s attempt %s failed: %s", run_id, attempt, error)
                raise
            except Exception:
                error = traceback.format_exc()
                logger.error("run %s attempt %s failed:\n%s", run_id, attempt, error)
                raise
        status = "cancelled" if ctx.stop_reason == "cancel" else "succeeded"
    except Exception:
        status = "failed"
        error = error or traceback.format_exc()
    finally:
        if in_main_thread:
            signal.signal(
                INTERRUPT_SIGNAL, previous_handler if previous_handler is not None else signal.SIG_DFL
            )

    # Given back only when the kind stopped on the interrupt: one that ran to its end without looking
    # (a kind's last phase may not check) has done the work, and finishes as any run does.
    if (
        ctx is not None
        and ctx.stop_reason == "interrupt"
        and ctx.stop_seen
        and status == "succeeded"
        and not heartbeat.lease_lost
    ):
        return _release(api, ctx, heartbeat, run_id, attempt)

    lease_lost = heartbeat.lease_lost
    if ctx is not None:
        try:
            ctx.close(status, final=not lease_lost)  # every point and result persisted before finish
            if ctx.closed_as == "cancelled":  # cancelled while its outputs were being stored
                status = "cancelled"
        except TrackingError as exc:
            logger.error("run %s: tracking failed: %s", run_id, exc)
            status = "failed"
            error = (error + "\n" if error else "") + f"tracking failed: {exc}"
    if heartbeat.lease_lost:
        heartbeat.stop()
        logger.warning("run %s attempt %s lost its lease: no finish sent", run_id, attempt)
        return "lost"

    progress = ctx.progress_snapshot() if ctx is not None else None
    if ctx is not None and error is not None:  # a traceback may quote a secret the run was handed
        error = ctx.redactor.text(error)
    # heartbeats go on until the finish is acknowledged: an API outage at finish time must not let the
    # reaper re-run work that is already done; one the API answers after the finish landed is refused
    # (the run is finished) and is no lost lease
    heartbeat.finish_sent()
    try:
        call_with_retry(
            lambda: api.finish(
                run_id,
                attempt,
                status,
                error=error,
                progress=progress,
            ),
            what="finish",
            deadline=FINISH_DEADLINE,
        )
    except (Conflict, NotFound) as exc:
        logger.warning(
            "run %s attempt %s: finish refused (%s); the run moved on without us", run_id, attempt, exc
        )
        return "lost"
    finally:
        heartbeat.stop()
    logger.info("run %s attempt %s finished: %s", run_id, attempt, status)
    return status
