"""A metric column's statistics over a group from its count, sum, sum of squares, min and max: mean, sample
standard deviation and the 95% Student-t interval of the mean (the formulas: backend/groups/service.py)."""

from __future__ import annotations

import math

from backend.groups.schemas import MetricStats


def stats(
    n: int, total: float | None, squares: float | None, low: float | None, high: float | None
) -> MetricStats:
    """A metric column's statistics from its count, sum, sum of squares, min and max over a group."""
    if n == 0 or total is None or squares is None:
        return MetricStats(n=0, mean=None, std=None, ci_low=None, ci_high=None, min=None, max=None)
    mean = total / n
    if n < 2:
        return MetricStats(n=n, mean=mean, std=None, ci_low=None, ci_high=None, min=low, max=high)
    variance = 0.0 if low == high else max((squares - total * total / n) / (n - 1), 0.0)
    std = math.sqrt(variance)
    from scipy.special import stdtrit  # here, not at module level: 0.4 s of every API process's start

    half = float(stdtrit(n - 1, 0.975)) * std / math.sqrt(n)
    return MetricStats(n=n, mean=mean, std=std, ci_low=mean - half, ci_high=mean + half, min=low, max=high)
