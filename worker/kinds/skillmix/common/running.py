"""What a cell reports while it is graded: the running metrics and the progress of its phases."""

from __future__ import annotations

from collections.abc import Callable

from worker.core.skillmix.cache import ReplyCache
from worker.core.skillmix.combinations import Combination
from worker.core.skillmix.metrics import METRICS
from worker.core.skillmix.pipeline import Generation, Grading, combination_best
from worker.tracking.context import RunContext


def cache_counts(cache: ReplyCache) -> dict[str, float]:
    return {"cached_replies": float(cache.hits), "new_replies": float(cache.misses)}


class RunningMetrics:
    """The metrics at step n = combinations graded so far: the six metrics' means over them, the failed
    and partial gradings and the cache's counts so far (logged as each combination's grading completes)."""

    def __init__(self, ctx: RunContext, cache: ReplyCache, filter_skill_names: bool) -> None:
        self.ctx, self.cache, self.filter_skill_names = ctx, cache, filter_skill_names
        self.best: list[dict[str, float]] = []  # per combination graded so far, its best of each metric
        self.failed = 0
        self.partial = 0

    def graded(self, combination: Combination, gens: list[Generation], gradings: list[list[Grading]]) -> None:
        self.best.append(combination_best(gens, gradings, self.filter_skill_names))
        self.failed += sum(1 for rounds in gradings for grading in rounds if grading.points is None)
        self.partial += sum(1 for rounds in gradings for grading in rounds if grading.partial)
        n = len(self.best)
        self.ctx.log_metrics(
            {
                **{m: sum(r[m] for r in self.best) / n for m in METRICS},
                "failed_gradings": float(self.failed),
                "partial_gradings": float(self.partial),
                **cache_counts(self.cache),
            },
            n,
        )


PHASES = {"generation turn 1": 0, "generation turn 2": 1, "grading": 2}


def phase_progress(ctx: RunContext) -> Callable[[str, int, int], None]:
    """Progress out of 300: a hundred per phase (the two generation turns, the grading)."""

    def progress(phase: str, done: int, total: int) -> None:
        ctx.progress(PHASES[phase] * 100 + (100 * done // max(total, 1)), 300, f"{phase}: {done}/{total}")

    return progress
