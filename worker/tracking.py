"""RunContext: everything an experiment kind may use while it runs (DESIGN.md, Contracts).

Kinds run unchanged under the platform (API sink + MLflow mirror), under ``reasonlab run spec.yaml``
(local files + MLflow) and in tests (local files only).
"""

from __future__ import annotations

import abc
from pathlib import Path
from typing import Any


class RunContext(abc.ABC):
    seed: int
    device: str
    out_dir: Path

    @abc.abstractmethod
    def log_params(self, params: dict[str, Any]) -> None:
        """Record flat or nested parameters of the run (mirrored to MLflow)."""

    @abc.abstractmethod
    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        """Buffer metric points at ``step``; flushed in the background. Re-logging a step overwrites it."""

    @abc.abstractmethod
    def log_result(self, record: Any) -> None:
        """Post a typed result record (a pydantic model from worker.specs, or a dict with a ``kind``)."""

    @abc.abstractmethod
    def progress(self, done: int, total: int, message: str = "") -> None:
        """Report progress; the dashboard shows a bar and an ETA."""

    @abc.abstractmethod
    def should_stop(self) -> bool:
        """True once a cancel was requested: the kind should return promptly (after a checkpoint)."""

    @abc.abstractmethod
    def save_checkpoint(self, state: dict[str, Any], step: int) -> None:
        """Persist ``state`` (torch-serialisable) for resume; flushes metrics logged so far first."""

    @abc.abstractmethod
    def load_checkpoint(self) -> tuple[dict[str, Any], int] | None:
        """The latest checkpoint ``(state, step)`` of this run (any attempt), or None."""

    def log(self, line: str) -> None:  # noqa: B027 - optional sink
        """A free-text log line (shown by ``reasonlab runs logs`` and the run page)."""
