"""The prefork pool with a prompt respawn of the pool process.

Every run gets a fresh pool process (``worker_max_tasks_per_child=1``), which claims it and hands it to
a job process of its own (``worker.runtime.zygote``). When that child exits, Celery's
AsynPool is woken by the child's sentinel, but the exit is sometimes not yet reapable (``exitcode`` still
None): ``maintain_pool`` then finds nothing to replace, and the replacement child is forked only by the
pool's 5-second maintenance timer (celery/celery#9588). A queued run then waits up to 5 s for a process.
Here the parent re-checks every 20 ms until the exit is reapable and replaces the child at once.

Which thread forks the job process. With an asynchronous broker (Redis) the pool runs in the worker's
event loop, on its main thread. With the filesystem broker (embedded mode, ``reasonlab up``) Celery has no
event loop and runs the pool with billiard's threads: every job process after the first is forked by the
pool's supervisor thread. Two things follow, both handled here for the warm shutdown:

- ``/proc/<pid>/task/<pid>/children`` lists the children of the main thread only, so it misses those job
  processes; ``job_pids`` asks the pool, and every thread, for the worker's children.
- Celery gives each pool process a parent-death signal (``PR_SET_PDEATHSIG``, SIGKILL), which Linux sends
  when the *thread* that forked the process exits, not the process. The supervisor thread exits as soon
  as a warm shutdown closes the pool, so a job process it forked was SIGKILLed a moment later, in the
  middle of checkpointing and giving its run back. A job process forked by a thread other than the main
  one clears that signal and watches its parent process instead (``outlive_the_forking_thread``). One
  forked by the main thread keeps it: there it means the worker's death, and it acts at once (a job
  process lingering after a kill -9 of its worker would hold the worker's broker connection open, and
  Redis could hand the next message to that dead consumer).
- billiard's threaded pool gives most signals of a pool process, SIGUSR2 included, its own exit handler
  right after ``worker_process_init``, replacing the handler the job process had just installed for the
  worker's interrupt: an idle job process then died of the interrupt ("exited with exitcode 70") instead
  of noting it. Handlers registered with ``keep_own_handler`` are put back after that reset.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from billiard import pool as billiard_pool
from celery.concurrency import asynpool, prefork

logger = logging.getLogger(__name__)

RECHECK_SECONDS = 0.02
MAX_RECHECKS = 250  # 5 s: by then the pool's own timer takes over
PARENT_CHECK_SECONDS = 0.2  # how often a job process forked by a pool thread checks for its worker
ORPHAN_EXIT_CODE = 70

# the pools of this process (one per worker), for job_pids
_pools: weakref.WeakSet[Any] = weakref.WeakSet()
# signals whose handler a job process installs itself at worker_process_init (keep_own_handler)
_own_handlers: set[int] = set()


def keep_own_handler(signum: int) -> None:
    """The handler a job process installs for ``signum`` at ``worker_process_init`` stays: billiard's
    threaded pool would replace it with its exit handler right after (see the module's docstring)."""
    _own_handlers.add(signum)


def job_pids() -> set[int]:
    """The PIDs of this worker's job processes: those its pools hold, and every child of every thread of
    this process (Linux; a job process may be the child of any of them, see the module's docstring)."""
    pids = {int(proc.pid) for pool in list(_pools) for proc in list(getattr(pool, "_pool", ())) if proc.pid}
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{os.getpid()}/task").iterdir():
            with contextlib.suppress(OSError, ValueError):  # a thread that just exited
                pids.update(int(pid) for pid in (task / "children").read_text().split())
    pids.discard(os.getpid())
    return pids


def outlive_the_forking_thread(interval: float = PARENT_CHECK_SECONDS) -> None:
    """In a job process forked by a thread of the worker other than its main one, at start: die with the
    worker process rather than with that thread. Clears the parent-death signal Celery set (Linux sends
    it when the forking thread exits: the pool's supervisor thread does at a warm shutdown) and starts a
    thread that exits this process once its parent, the worker, is gone (a kill -9 of the worker must
    leave no orphan job)."""
    if not sys.platform.startswith("linux"):
        return
    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, 0, 0, 0, 0)
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                logger.critical("the worker process %d died; this job process exits", parent)
                os._exit(ORPHAN_EXIT_CODE)

    threading.Thread(target=watch, name="reasonlab-parent-watch", daemon=True).start()


class _JobProcessMixin:
    """A pool process's loop (billiard's ``Worker``: made in the parent by the thread that then forks
    the process, run in the child). In the child it outlives the forking thread unless that was the main
    one, and keeps the handlers of ``keep_own_handler``'s signals that the process installed at its init
    (``worker_process_init``) when billiard resets the signals after it."""

    initializer: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.forked_by_main_thread = threading.current_thread() is threading.main_thread()

    def after_fork(self) -> None:
        init = self.initializer
        kept: dict[int, Any] = {}

        def init_and_note_handlers(*args: Any) -> None:
            if init is not None:
                init(*args)
            kept.update((signum, signal.getsignal(signum)) for signum in _own_handlers)
            # held while billiard's handler is in place, delivered once the process's own is back
            signal.pthread_sigmask(signal.SIG_BLOCK, _own_handlers)

        self.initializer = init_and_note_handlers
        try:
            super().after_fork()  # type: ignore[misc]
        finally:
            self.initializer = init
            for signum, handler in kept.items():
                if handler is not None and signal.getsignal(signum) is not handler:
                    signal.signal(signum, handler)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, kept)
        # after Celery's initializer, which sets the death signal (a spawned process has no attribute)
        if not getattr(self, "forked_by_main_thread", True):
            outlive_the_forking_thread()


class _AsyncJobProcess(_JobProcessMixin, asynpool.Worker):
    pass


class _ThreadedJobProcess(_JobProcessMixin, billiard_pool.Worker):
    pass


class ThreadedPool(billiard_pool.Pool):
    """billiard's pool as Celery runs it without an event loop (the filesystem broker)."""

    Worker = _ThreadedJobProcess

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _pools.add(self)


class PromptRespawnAsynPool(asynpool.AsynPool):
    Worker = _AsyncJobProcess

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _pools.add(self)

    def _event_process_exit(self, hub: Any, proc: Any) -> None:
        super()._event_process_exit(hub, proc)
        if proc.exitcode is not None:
            return

        def recheck(n: int) -> None:
            if proc.exitcode is None and n < MAX_RECHECKS:
                hub.call_later(RECHECK_SECONDS, recheck, n + 1)
            else:
                self.maintain_pool()

        hub.call_later(RECHECK_SECONDS, recheck, 1)


class PromptRespawnTaskPool(prefork.TaskPool):
    Pool = PromptRespawnAsynPool  # with an event loop (Redis)
    BlockingPool = ThreadedPool  # without (the filesystem broker)


POOL = f"{__name__}:PromptRespawnTaskPool"
