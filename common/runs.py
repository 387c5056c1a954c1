"""The run-status vocabulary, written once for Python (the dashboard's is generated from the OpenAPI
document). Lifecycle: queued -> running -> succeeded | failed | cancelled (docs/architecture.md)."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal


class RunStatus(StrEnum):
    queued = "queued"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"


RUN_STATUSES: tuple[str, ...] = tuple(s.value for s in RunStatus)
FINISHED_STATUSES: tuple[str, ...] = (
    RunStatus.succeeded.value,
    RunStatus.failed.value,
    RunStatus.cancelled.value,
)

FinalStatus = Literal["succeeded", "failed", "cancelled"]
"""How a run attempt ends, as the worker reports it to ``POST /runs/{id}/finish``."""
