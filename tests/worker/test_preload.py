"""The worker's preload (worker/jobs/server.py ``preload``): by default the job server imports every kind and
torch's compiler stack before it forks any job process; ``REASONLAB_WORKER_PRELOAD=false`` skips the
imports but torch's. The worker itself imports none, not even torch (its start, worker/tasks.py, blocks the interrupt signal until a
pool process's handler is there, and starts the job server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = """
import json, signal, sys
from worker import executor, tasks
from worker.jobs import server as jobserver
MODULES = ("torch", "torch._dynamo", "worker.core.cap", "worker.core.models")
before = {m for m in MODULES if m in sys.modules}
tasks._block_interrupt()
jobserver.preload()
print(json.dumps({
    "before": sorted(before),
    "after": sorted(m for m in MODULES if m in sys.modules),
    "blocked": executor.INTERRUPT_SIGNAL in signal.pthread_sigmask(signal.SIG_BLOCK, set()),
}))
"""


def _probe(preload: str | None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "REASONLAB_WORKER_PRELOAD"}
    if preload is not None:
        env["REASONLAB_WORKER_PRELOAD"] = preload
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=Path(__file__).parents[2], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("preload", [None, "true"])
@pytest.mark.heavy
def test_the_default_worker_imports_every_kind_before_it_forks(preload: str | None) -> None:
    got = _probe(preload)
    # importing the worker's tasks or the job server loads none of them, not even torch: the worker's own
    # processes (its main process, its pool processes) never run a kind (~1.1 CPU-s and ~210 MB each)
    assert got["before"] == []
    assert got["after"] == ["torch", "torch._dynamo", "worker.core.cap", "worker.core.models"]
    assert got["blocked"] is True


@pytest.mark.heavy
def test_a_worker_without_preload_imports_no_kind_and_still_blocks_the_interrupt() -> None:
    got = _probe("false")
    assert got["after"] == ["torch"]  # torch still: every kind needs it, each job process would import it
    assert got["blocked"] is True
