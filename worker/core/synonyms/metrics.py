"""The synonym-intervention metrics of paper 003, appendix B.4 (eqs. 12-14).

Choices where the paper is silent (REFERENCE.md, "Open points"; docs/experiments/carma.md):
- ConsistSyn's numerator counts the items correct both before and after replacement (replacement is
  applied to the originally-correct items only, so it never exceeds 100%);
- CV's sigma is the population standard deviation (ddof = 0) of the per-seed ConsistSyn;
- NI's baseline is whichever model the caller names (the dashboard offers FT and Original).
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def consist_syn(correct_before: Sequence[bool], correct_after: Sequence[bool]) -> float:
    """ConsistSyn = |correct after replacement| / |correct before replacement| x 100 (paper 003, B.4,
    eq. 12), counting after-replacement successes among the items correct before. 0 when none was."""
    assert len(correct_before) == len(correct_after), f"{len(correct_before)} != {len(correct_after)}"
    before = sum(bool(b) for b in correct_before)
    both = sum(bool(b) and bool(a) for b, a in zip(correct_before, correct_after))
    return 100.0 * both / before if before else 0.0


def mean_std(values: Sequence[float], ddof: int = 0) -> tuple[float, float]:
    """Mean and standard deviation (population, ddof = 0, by default) of per-seed values."""
    assert len(values) > ddof, f"need more than {ddof} values, got {len(values)}"
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / (len(values) - ddof)
    return mean, math.sqrt(var)


def coefficient_of_variation(values: Sequence[float], ddof: int = 0) -> float:
    """CV = sigma / mu over runs (paper 003, B.4, eq. 13); 0 when mu = 0 and sigma = 0, inf when only mu is."""
    mean, std = mean_std(values, ddof)
    if mean == 0:
        return 0.0 if std == 0 else math.inf
    return std / mean


def normalised_improvement(consist_syn_model: float, consist_syn_baseline: float) -> float:
    """NI = (ConsistSyn_model - ConsistSyn_baseline) / ConsistSyn_baseline x 100 (paper 003, B.4, eq. 14)."""
    assert consist_syn_baseline != 0, "NI is undefined for a baseline ConsistSyn of 0"
    return (consist_syn_model - consist_syn_baseline) / consist_syn_baseline * 100.0
