"""A training run inside another run: a child of the parent's RunContext.

A kind that trains models as one step of its own run (``topk_eval``'s in-run SMoEs) hands the trainer
kind a ``TrainingContext``: its metrics go to the parent under a prefix, its result records stay here
(the parent decides what to post), cancel comes from the parent, and its progress is one share of the
parent's. No checkpoint: an attempt that is retried trains again from the start. Light, like
``worker.tracking.context``: the standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from worker.tracking.context import RunContext


class TrainingContext(RunContext):
    """The context of training ``index`` of ``count`` inside ``parent``: the trainings are the first
    ``count`` of ``count + 1`` equal shares of the parent's progress (the parent's own step is the last).

    ``prefix`` is put before every metric key (``"train/k2/"``), ``label`` before every progress message
    (``"training k=2"``), ``tag`` in brackets before every log line; ``out_dir`` is the training's folder.
    """

    def __init__(
        self,
        parent: RunContext,
        *,
        index: int,
        count: int,
        out_dir: Path,
        prefix: str,
        label: str,
        tag: str,
    ) -> None:
        self.parent, self.index, self.count = parent, index, count
        self.prefix, self.label, self.tag = prefix, label, tag
        self.seed, self.device, self.out_dir = parent.seed, parent.device, out_dir
        self.results: list[Any] = []

    def log_params(self, params: dict[str, Any]) -> None:
        pass

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        self.parent.log_metrics({f"{self.prefix}{key}": v for key, v in metrics.items()}, step)

    def log_result(self, record: Any) -> None:
        self.results.append(record)

    def log_examples(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        """Into the parent's table ``<prefix>.<table>`` (``train.k2.predictions``)."""
        prefix = ".".join(part for part in self.prefix.split("/") if part)
        self.parent.log_examples(f"{prefix}.{table}" if prefix else table, rows)

    def progress(self, done: int, total: int, message: str = "") -> None:
        share = (self.index + done / max(total, 1)) / (self.count + 1)
        self.parent.progress(int(share * 1000), 1000, f"{self.label}: {message}")

    def should_stop(self) -> bool:
        return self.parent.should_stop()

    def save_checkpoint(self, state: dict[str, Any], step: int) -> None:
        pass

    def load_checkpoint(self) -> tuple[dict[str, Any], int] | None:
        return None

    def log(self, line: str) -> None:
        self.parent.log(f"[{self.tag}] {line}")
