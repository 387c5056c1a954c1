"""The prefork pool with a prompt respawn of the job process.

Every run gets a fresh child process (``worker_max_tasks_per_child=1``). When that child exits, Celery's
AsynPool is woken by the child's sentinel, but the exit is sometimes not yet reapable (``exitcode`` still
None): ``maintain_pool`` then finds nothing to replace, and the replacement child is forked only by the
pool's 5-second maintenance timer (celery/celery#9588). A queued run then waits up to 5 s for a process.
Here the parent re-checks every 20 ms until the exit is reapable and replaces the child at once.
"""

from __future__ import annotations

from typing import Any

from celery.concurrency import asynpool, prefork

RECHECK_SECONDS = 0.02
MAX_RECHECKS = 250  # 5 s: by then the pool's own timer takes over


class PromptRespawnAsynPool(asynpool.AsynPool):
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
    Pool = PromptRespawnAsynPool


POOL = f"{__name__}:PromptRespawnTaskPool"
