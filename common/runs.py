"""The run-status vocabulary, written once for Python (the dashboard's is generated from the OpenAPI
document). Lifecycle: queued -> running -> succeeded | failed | cancelled (docs/architecture.md)."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, get_args


class RunStatus(StrEnum):
    queued = "queued"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"


RUN_STATUSES: tuple[str, ...] = tuple(s.value for s in RunStatus)

FinalStatus = Literal["succeeded", "failed", "cancelled"]
"""How a run ends: the final statuses of the lifecycle, what the worker reports to ``POST /runs/{id}/finish``
and what a tracked run closes with (the one final-status type of the API, the worker and the CLI)."""

FINISHED_STATUSES: tuple[str, ...] = get_args(FinalStatus)

EXTERNAL_KIND = "external"
"""The kind of a run a script creates and runs itself (through the SDK): no manifest declares it, so no
experiment can submit it to a worker; its spec is the script's free-form config (backend/tracking/)."""

SYSTEM_METRIC_PREFIX = "system/"
"""The keys of a run's system samples (CPU, memory, GPU), logged by the worker's heartbeat and by the SDK's
sampler at steps that count seconds since the run was created, not the run's own steps."""

MLFLOW_QUEUE = "mlflow"
"""The queue of an external run MLflow's own client opened (backend/mlflowcompat/): no worker serves it, and
its client sends no heartbeats between its calls, so the reaper gives it ``REASONLAB_MLFLOW_RUN_TIMEOUT`` of
silence instead of the heartbeat timeout (every call that writes to it counts as a heartbeat)."""
