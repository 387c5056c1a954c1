"""The heartbeat thread of one attempt: progress up, cancel and lease loss down (docs/architecture.md,
Run lifecycle, step 4)."""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import TYPE_CHECKING

from reasonlab_sdk.client import Conflict, Forbidden, NotFound, ReasonLabClient, Unauthorized

if TYPE_CHECKING:
    from worker.runtime.sysmetrics import SystemSampler
    from worker.tracking.tracked import ApiRunContext

logger = logging.getLogger(__name__)


class Heartbeat:
    """Background heartbeats of one attempt: reports progress, turns ``cancel_requested`` into the
    context's stop flag, and a 409 (the attempt no longer owns the run) into ``lease_lost``.

    With ``exit_with_parent`` (a job process), the process exits when its parent (the worker's job server,
    or the pool process that started it) dies: an orphan must not go on heartbeating a run that the reaper
    should hand to a new worker.

    With a ``sampler`` (worker.runtime.sysmetrics), each beat also logs the job's system metrics (``system/*``)
    through the attached context's buffered metric path.
    """

    def __init__(
        self,
        client: ReasonLabClient,
        run_id: int,
        attempt: int,
        interval: float,
        *,
        exit_with_parent: bool = False,
        lease_timeout: float | None = None,
        sampler: SystemSampler | None = None,
    ) -> None:
        self.client = client
        self.run_id = run_id
        self.attempt = attempt
        self.interval = interval
        self.cancel_requested = False
        self.lease_lost = False
        self.interrupted = False
        self.finishing = False  # finish_sent(): a refused beat is then our own finish, not a lost lease
        self._ctx: ApiRunContext | None = None
        self._stop = threading.Event()
        self._parent = os.getppid() if exit_with_parent else None
        self._last_ok = time.monotonic()
        self.lease_timeout = lease_timeout
        self.sampler = sampler
        self._thread = threading.Thread(target=self._loop, name="reasonlab-heartbeat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def attach(self, ctx: ApiRunContext) -> None:
        """Route stop signals to ``ctx`` (including any that came before it existed)."""
        self._ctx = ctx
        self._apply()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.client.timeout + 5)

    def finish_sent(self) -> None:
        """The attempt is about to send its finish: from now on a refused beat is expected (the finish
        may land first and the beat find the run finished, 409 "it is succeeded"), and the finish's own
        answer says whether the run moved on without us. Beats go on meanwhile: an API outage at finish
        time must not let the reaper re-run finished work."""
        self.finishing = True

    def _apply(self) -> None:
        ctx = self._ctx
        if ctx is None:
            return
        if self.lease_lost:
            ctx.mark_lease_lost()
        elif self.cancel_requested:
            ctx.request_stop("cancel")
        elif self.interrupted:
            ctx.request_stop("interrupt")

    def interrupt(self) -> None:
        """The worker is shutting down: stop the kind at its next check (it checkpoints first)."""
        self.interrupted = True
        self._apply()

    def _loop(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(min(self.interval, 1.0)):
            if self._parent is not None and os.getppid() != self._parent:
                logger.critical("run %s: the worker process died; exiting this orphaned job", self.run_id)
                os._exit(70)
            if time.monotonic() - last < self.interval:
                continue
            last = time.monotonic()
            if self.beat():
                return
            self.log_system_metrics()

    def log_system_metrics(self) -> None:
        """One sample of the job's system metrics into the attached context (until it is closed)."""
        ctx = self._ctx
        if self.sampler is None or ctx is None or ctx.closed:
            return
        sample = self.sampler.sample()
        if sample:
            ctx.log_metrics(sample, self.sampler.step())

    def beat(self) -> bool:
        """One heartbeat; True when the lease is lost (no further heartbeats make sense)."""
        progress = self._ctx.progress_snapshot() if self._ctx is not None else None
        try:
            answer = self.client.heartbeat(self.run_id, self.attempt, progress)
        except (Conflict, NotFound, Unauthorized, Forbidden) as exc:
            if self.finishing:
                # the finish raced this beat and landed first (the run is finished, the attempt's token
                # is spent): nothing is lost, and the executor reads the finish's own answer
                logger.debug(
                    "run %s attempt %s: beat refused after the finish (%s)", self.run_id, self.attempt, exc
                )
                return True
            # a rejected token counts as a lost lease: the reaper will hand the run to a worker that
            # the API still trusts, and two writers must never share a checkpoint folder
            logger.error("run %s attempt %s lost its lease (%s): stopping", self.run_id, self.attempt, exc)
            self.lease_lost = True
            self._apply()
            return True
        except Exception as exc:  # API down or a transient fault: the next beat tries again
            silent = time.monotonic() - self._last_ok
            logger.warning("run %s: heartbeat failed (%.0f s without one): %s", self.run_id, silent, exc)
            if self.lease_timeout is not None and silent > self.lease_timeout:
                # Cut off from the API longer than the reaper waits: the run has been (or is about to be)
                # handed to a new attempt, so this one stops writing rather than share its checkpoints.
                logger.error(
                    "run %s attempt %s: no heartbeat for %.0f s, giving up the lease",
                    self.run_id,
                    self.attempt,
                    silent,
                )
                self.lease_lost = True
                self._apply()
                return True
            return False
        self._last_ok = time.monotonic()
        if answer.get("cancel_requested") and not self.cancel_requested:
            logger.info("run %s: cancel requested", self.run_id)
            self.cancel_requested = True
            self._apply()
        return False
