"""Few-shot subsampling (paper 001, section 5.3): a seeded subset of each task's training examples, by
count or by fraction, the same subset for every variant compared (same seed)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from worker.core.reasonformer.data.example import Example


def subsample(
    examples: Sequence[Example], *, count: int | None = None, fraction: float | None = None, seed: int = 0
) -> list[Example]:
    """Per task, ``count`` examples or ``ceil``-free ``round(fraction * n)`` (at least 1), drawn without
    replacement with ``seed``; order within a task kept. Exactly one of count/fraction."""
    assert (count is None) != (fraction is None), (
        f"give count or fraction, not both/neither: {count}, {fraction}"
    )
    assert count is None or count >= 1, f"count >= 1, got {count}"
    assert fraction is None or 0.0 < fraction <= 1.0, f"fraction in (0, 1], got {fraction}"
    by_task: dict[str, list[int]] = {}
    for i, e in enumerate(examples):
        by_task.setdefault(e.task, []).append(i)
    rng = np.random.default_rng(seed)
    keep: list[int] = []
    for task in sorted(by_task):
        idx = by_task[task]
        n = min(len(idx), count if count is not None else max(1, round(fraction * len(idx))))  # type: ignore[operator]
        keep += sorted(rng.choice(idx, size=n, replace=False).tolist())
    return [examples[i] for i in sorted(keep)]
