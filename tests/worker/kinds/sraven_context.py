"""An in-memory RunContext for the smoe_sraven tests and the docs' CPU sweep script."""

from __future__ import annotations

import io
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from worker.tracking import RunContext
from worker.tracking.context import example_rows


class MemoryContext(RunContext):
    """Records everything in memory. Checkpoints round-trip through ``torch.save``/``torch.load
    (weights_only=True)`` as a real sink would. ``stop_after`` makes ``should_stop()`` true once that many
    metric steps were logged (a cooperative cancel)."""

    def __init__(
        self,
        seed: int = 0,
        out_dir: Path | None = None,
        stop_after_step: int | None = None,
        secrets: dict[str, str] | None = None,
    ) -> None:
        self.secrets = dict(secrets or {})
        self.seed = seed
        self.device = "cpu"
        # smoe_sraven saves its model under out_dir: a fresh folder, never the working directory
        self.out_dir = out_dir or Path(tempfile.mkdtemp(prefix="sraven-ctx-"))
        self.params: dict[str, Any] = {}
        self.metrics: dict[str, dict[int, float]] = {}
        self.results: list[Any] = []
        self.examples: dict[str, list[dict[str, Any]]] = {}
        self.lines: list[str] = []
        self.checkpoint: tuple[bytes, int] | None = None
        self.stop_after_step = stop_after_step
        self.last_step = 0

    def log_examples(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        for key, data in example_rows(table, rows):
            self.examples.setdefault(table, []).append({"key": key, **data})

    def secret(self, name: str) -> str:
        if name not in self.secrets:
            return super().secret(name)
        return self.secrets[name]

    def log_params(self, params: dict[str, Any]) -> None:
        self.params.update(params)

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        self.last_step = max(self.last_step, step)
        for key, value in metrics.items():
            self.metrics.setdefault(key, {})[step] = value

    def log_result(self, record: Any) -> None:
        self.results.append(record)

    def progress(self, done: int, total: int, message: str = "") -> None:
        pass

    def should_stop(self) -> bool:
        return self.stop_after_step is not None and self.last_step >= self.stop_after_step

    def save_checkpoint(self, state: dict[str, Any], step: int) -> None:
        buffer = io.BytesIO()
        torch.save(state, buffer)
        self.checkpoint = (buffer.getvalue(), step)

    def load_checkpoint(self) -> tuple[dict[str, Any], int] | None:
        if self.checkpoint is None:
            return None
        data, step = self.checkpoint
        return torch.load(io.BytesIO(data), weights_only=True), step

    def log(self, line: str) -> None:
        self.lines.append(line)
