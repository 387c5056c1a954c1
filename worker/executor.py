"""Execute one attempt of one run: claim, heartbeat, RunContext, the kind, flush, finish.

The executor talks to the platform only through the REST API (the backend is the single writer of the
database). The claim makes a task idempotent: a redelivered message, or a stale attempt, gets 409 and
returns without running anything. The heartbeat thread is ``worker.heartbeat``, the capture of the run's
Python logging ``worker.logcapture``.

    claim ──> heartbeat thread (progress, cancel, lease) ──> MLflow run ──> kind.run(spec, ctx)
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

from common.settings import SharedSettings
from worker import api_types as api
from worker.client import ApiUnavailable, Conflict, NotFound, ReasonLabClient
from worker.heartbeat import Heartbeat
from worker.kinds import get_kind
from worker.logcapture import capture_logs
from worker.sysmetrics import SystemSampler, step_origin
from worker.tracking.context import RunError, RunStatus
from worker.tracking.mlflow import MlflowSink, mlflow_artifact_location, mlflow_key
from worker.tracking.tracked import ApiRunContext, TrackingError
from worker.tracking.writer import MetricPoint, WriterOptions

logger = logging.getLogger(__name__)

Outcome = Literal["succeeded", "failed", "cancelled", "skipped", "lost", "released"]
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


def start_mlflow(
    settings: SharedSettings, run: api.RunPublic, attempt: int, worker: str
) -> MlflowSink | None:
    """The run's MLflow mirror: reopened when the run already has one (attempt > 1), else created in the
    experiment ``reasonlab/experiment-<id>``. None (with a warning) when MLflow is unreachable."""
    experiment_id = run.get("experiment_id")
    try:
        return MlflowSink.start(
            settings.mlflow_tracking_uri,
            f"reasonlab/experiment-{experiment_id}",
            f"run-{run['id']}",
            tags={
                "reasonlab.run_id": str(run["id"]),
                "reasonlab.experiment_id": str(experiment_id),
                "reasonlab.attempt": str(attempt),
                "reasonlab.kind": str(run.get("kind")),
                "reasonlab.worker": worker,
                **{f"reasonlab.param.{k}": str(v) for k, v in (run.get("params") or {}).items()},
            },
            artifact_location=mlflow_artifact_location(
                settings.mlflow_tracking_uri, Path(settings.artifact_root) / "mlflow"
            ),
            existing_run_id=run.get("mlflow_run_id") or None,
        )
    except Exception:
        logger.warning("run %s: MLflow mirror unavailable, running without it", run["id"], exc_info=True)
        return None


MAX_POINTS = 10_000  # the API's largest max_points: a window this wide answers one bucket per step


def platform_points(api: ReasonLabClient, run_id: int, after: dict[str, int]) -> list[MetricPoint]:
    """The run's points the platform holds beyond ``after[mirror key]`` (every point of a key not in it),
    read exactly: windows of ``MAX_POINTS`` steps, where every bucket is one step. Non-finite values,
    which the platform stores as null, come back as NaN."""
    points: list[MetricPoint] = []
    now = time.time()
    for key in api.metric_keys(run_id):
        series = api.get_metrics(run_id, [key], max_points=1)["series"].get(key)
        if series is None or series["step_min"] is None or series["step_max"] is None:
            continue
        lo = max(series["step_min"], after.get(mlflow_key(key), series["step_min"] - 1) + 1)
        while lo <= series["step_max"]:
            hi = lo + MAX_POINTS - 1
            window = api.get_metrics(run_id, [key], max_points=MAX_POINTS, step_min=lo, step_max=hi)
            for bucket in window["series"][key]["buckets"]:
                value = bucket["last"]
                points.append(
                    MetricPoint(key, bucket["step_start"], float("nan") if value is None else value, now)
                )
            lo = hi + 1
    return points


def catch_up_mirror(api: ReasonLabClient, run_id: int, attempt: int, mlflow: MlflowSink) -> None:
    """A later attempt: bring the MLflow mirror up to what the platform holds (the old attempt may have
    died before its mirror caught up with its last checkpoint), so the mirror skips the steps this attempt
    logs again and has no gap either. Best effort, like the mirror itself."""
    try:
        written = mlflow.catch_up(platform_points(api, run_id, mlflow.floor))
    except Exception as exc:
        logger.warning("run %s attempt %s: MLflow mirror not caught up: %s", run_id, attempt, exc)
        return
    if written:
        logger.info("run %s attempt %s: %d points copied to the MLflow mirror", run_id, attempt, written)


def _release(
    api: ReasonLabClient, ctx: ApiRunContext, heartbeat: Heartbeat, run_id: int, attempt: int
) -> Outcome:
    """The kind stopped on the shutdown signal after a checkpoint: persist everything, give the run back."""
    try:
        ctx.close("succeeded", final=False)  # flush; MLflow's run stays open for the next attempt
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
    use_mlflow: bool = True,
    exit_with_parent: bool = False,
    writer_options: WriterOptions | None = None,
    worker: str | None = None,
) -> Outcome:
    """Run ``attempt`` of run ``run_id`` to its end and report it; what happened.

    ``skipped``: the claim was refused (409/404): another delivery has this attempt, or it is stale.
    ``lost``: the lease was lost mid-run (the reaper gave the run to a new attempt): no finish is sent.
    Raises ApiUnavailable when the API could not be reached to claim, Unauthorized when it refused the
    worker's token (nothing ran in either case: the task retries later).
    """
    owns_client = client is None
    api = client or ReasonLabClient(settings.api_url, worker_token(settings))
    worker = worker or worker_name()
    try:
        if attempt is None:  # a message without an attempt runs the run's current one
            attempt = int(
                call_with_retry(lambda: api.get_run(run_id), what="get run", deadline=CLAIM_DEADLINE)[
                    "attempt"
                ]
            )
        claimed_attempt = attempt
        try:
            run = call_with_retry(
                lambda: api.claim(run_id, claimed_attempt, worker), what="claim", deadline=CLAIM_DEADLINE
            )
        except (Conflict, NotFound) as exc:
            logger.info("run %s attempt %s not claimed (%s): nothing to do", run_id, attempt, exc)
            return "skipped"
        logger.info("run %s attempt %s claimed by %s", run_id, attempt, worker)
        return _run_claimed(api, run, attempt, settings, use_mlflow, exit_with_parent, writer_options, worker)
    finally:
        if owns_client:
            api.close()


def _run_claimed(
    api: ReasonLabClient,
    run: api.RunPublic,
    attempt: int,
    settings: SharedSettings,
    use_mlflow: bool,
    exit_with_parent: bool,
    writer_options: WriterOptions | None,
    worker: str,
) -> Outcome:
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
    ctx: ApiRunContext | None = None
    mlflow: MlflowSink | None = None
    status: RunStatus = "failed"
    error: str | None = None
    try:
        kind = get_kind(run["kind"])
        spec = kind.spec.model_validate(run["spec"])
        if use_mlflow:
            mlflow = start_mlflow(settings, run, attempt, worker)
            if mlflow is not None and mlflow.run_id != run.get("mlflow_run_id"):
                mlflow_run_id = mlflow.run_id
                try:
                    call_with_retry(
                        lambda: api.patch_run(run_id, mlflow_run_id=mlflow_run_id),
                        what="record the MLflow run",
                        deadline=PATCH_DEADLINE,
                    )
                except Exception as exc:
                    logger.warning("run %s: could not record MLflow run %s: %s", run_id, mlflow_run_id, exc)
            if mlflow is not None and attempt > 1:
                catch_up_mirror(api, run_id, attempt, mlflow)
        ctx = ApiRunContext(
            api,
            run_id,
            attempt,
            seed=spec.seed,
            device=spec.resources.device,
            artifact_root=Path(settings.artifact_root),
            mlflow=mlflow,
            options=writer_options,
        )
        heartbeat.attach(ctx)
        with capture_logs(ctx):
            try:
                logger.info("run %s attempt %s: kind %s on %s", run_id, attempt, run["kind"], ctx.device)
                kind.run(spec, ctx)
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

    if (
        ctx is not None
        and ctx.stop_reason == "interrupt"
        and status == "succeeded"
        and not heartbeat.lease_lost
    ):
        return _release(api, ctx, heartbeat, run_id, attempt)

    lease_lost = heartbeat.lease_lost
    if ctx is not None:
        try:
            ctx.close(status, final=not lease_lost)  # every point and result persisted before finish
        except TrackingError as exc:
            logger.error("run %s: tracking failed: %s", run_id, exc)
            status = "failed"
            error = (error + "\n" if error else "") + f"tracking failed: {exc}"
    elif mlflow is not None and not lease_lost:
        try:
            mlflow.finish(status)
        except Exception as exc:
            logger.warning("run %s: MLflow status not recorded: %s", run_id, exc)
    if heartbeat.lease_lost:
        heartbeat.stop()
        logger.warning("run %s attempt %s lost its lease: no finish sent", run_id, attempt)
        return "lost"

    progress = ctx.progress_snapshot() if ctx is not None else None
    # heartbeats go on until the finish is acknowledged: an API outage at finish time must not let the
    # reaper re-run work that is already done
    try:
        call_with_retry(
            lambda: api.finish(
                run_id,
                attempt,
                status,
                error=error,
                mlflow_run_id=mlflow.run_id if mlflow else None,
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
