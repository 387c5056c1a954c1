"""backend/claims/stats.py alone, against scipy.stats and numpy computed here: arms and tests from sums (as the
database hands them over), Holm's procedure against its definition as a step-down test, the needed n
against the noncentral t's exact power over a grid, the bootstrap's determinism, and the verdict's rules."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from backend.claims import stats

RNG = np.random.default_rng(20261128)


def _sums(x: np.ndarray) -> tuple[int, float, float]:
    return len(x), float(x.sum()), float((x * x).sum())


@pytest.mark.parametrize("n", [2, 3, 8, 40])
def test_arm_and_tests_from_sums_match_scipy(n: int) -> None:
    a = RNG.normal(0.6, 0.05, n)
    b = a + RNG.normal(0.03, 0.02, n)
    arm = stats.arm(*_sums(a), alpha=0.1)
    low, high = sps.t.interval(0.9, n - 1, loc=a.mean(), scale=sps.sem(a))
    assert arm.mean == pytest.approx(a.mean(), rel=1e-12) and arm.std == pytest.approx(
        a.std(ddof=1), rel=1e-9
    )
    assert (arm.ci_low, arm.ci_high) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))
    paired = stats.paired_t(*_sums(b - a), alpha=0.05)
    ref = sps.ttest_rel(b, a)
    assert paired.statistic == pytest.approx(ref.statistic, rel=1e-8)
    assert paired.p_value == pytest.approx(ref.pvalue, rel=1e-8)
    ci = ref.confidence_interval(0.95)
    assert (paired.ci_low, paired.ci_high) == (
        pytest.approx(ci.low, rel=1e-8),
        pytest.approx(ci.high, rel=1e-8),
    )
    welch = stats.welch_t(stats.arm(*_sums(a), alpha=0.05), stats.arm(*_sums(b), alpha=0.05), alpha=0.05)
    ref = sps.ttest_ind(b, a, equal_var=False)
    assert welch.statistic == pytest.approx(ref.statistic, rel=1e-8)
    assert welch.p_value == pytest.approx(ref.pvalue, rel=1e-8)
    assert welch.df == pytest.approx(ref.df, rel=1e-8)
    ci = ref.confidence_interval(0.95)
    assert (welch.ci_low, welch.ci_high) == (
        pytest.approx(ci.low, rel=1e-8),
        pytest.approx(ci.high, rel=1e-8),
    )


def test_no_spread_at_all_is_an_exact_effect() -> None:
    same = stats.paired_t(*_sums(np.array([0.1, 0.1, 0.1])), alpha=0.05)
    assert same.p_value == 0.0 and same.ci_low == same.ci_high == pytest.approx(0.1)
    none = stats.paired_t(*_sums(np.zeros(4)), alpha=0.05)
    assert none.p_value == 1.0 and none.effect == 0.0


def _holm_by_rejection(p: list[float], alpha: float) -> list[bool]:
    """Holm's step-down test as the paper states it: reject H(1)..H(k-1) for the first k with
    p(k) > alpha / (m - k + 1)."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    rejected = [False] * m
    for rank, i in enumerate(order):
        if p[i] > alpha / (m - rank):
            break
        rejected[i] = True
    return rejected


def test_holm_adjusted_p_values_reject_exactly_what_the_step_down_test_rejects() -> None:
    for m in (1, 2, 3, 5, 9):
        for _ in range(40):
            p = [float(x) for x in RNG.uniform(0, 0.08, m)]
            adjusted = stats.holm(list(p))
            assert all(a is not None and a >= q for a, q in zip(adjusted, p, strict=True))
            for alpha in (0.01, 0.05, 0.1):
                assert [a is not None and a <= alpha for a in adjusted] == _holm_by_rejection(p, alpha)
    # a hypothesis without data counts in m as p = 1 and stays without a p-value
    assert stats.holm([0.01, None, 0.02]) == [pytest.approx(0.03), None, pytest.approx(0.04)]
    assert stats.holm([]) == []


def _exact_n(delta: float, sd: float, alpha: float, power: float, paired: bool) -> int:
    """The first n, walking up from 2, whose test reaches ``power`` (scipy.stats' noncentral t)."""
    for n in itertools.count(2):
        df = n - 1 if paired else 2 * (n - 1)
        nc = delta / (sd * math.sqrt((1 if paired else 2) / n))
        crit = sps.t.ppf(1 - alpha / 2, df)
        if sps.nct.sf(crit, df, nc) + sps.nct.cdf(-crit, df, nc) >= power:
            return n
    raise AssertionError


@pytest.mark.parametrize("paired", [True, False])
def test_needed_n_is_the_smallest_n_with_the_power_by_a_walk_over_n(paired: bool) -> None:
    for ratio, alpha, power in itertools.product((0.2, 0.5, 1.0, 2.0, 4.0), (0.05, 0.01), (0.8, 0.9)):
        got = stats.needed_n(1.0, ratio, alpha, power, paired)
        assert got == _exact_n(ratio, 1.0, alpha, power, paired), (ratio, alpha, power, got)
    # the normal approximation's n is a lower bound the t test needs a little more than
    n = stats.needed_n(2.0, 0.5, 0.05, 0.8, True)
    assert n is not None and n >= math.ceil(16 * (1.959964 + 0.841621) ** 2 / 1)
    assert stats.needed_n(1.0, 0.0, 0.05, 0.8, True) is None
    assert stats.needed_n(0.0, 0.1, 0.05, 0.8, True) == 2


def test_the_bootstrap_is_seeded_and_agrees_with_the_t_interval_on_normal_data() -> None:
    a = RNG.normal(0.0, 1.0, 60)
    b = a + RNG.normal(0.5, 1.0, 60)
    one = stats.bootstrap(list(a), list(b), True, 20000, 3, 0.05)
    assert one == stats.bootstrap(list(a), list(b), True, 20000, 3, 0.05)
    t = sps.ttest_rel(b, a).confidence_interval(0.95)
    assert one.ci_low == pytest.approx(t.low, abs=0.05) and one.ci_high == pytest.approx(t.high, abs=0.05)
    two = stats.bootstrap(list(a), list(b), False, 20000, 3, 0.05)
    assert two.effect == pytest.approx(b.mean() - a.mean()) and two.ci_low < two.effect < two.ci_high


def _result(effect: float, low: float, high: float) -> stats.TestResult:
    return stats.TestResult(effect, low, high, 0.0, None, None, 1.0)


def test_verdict_rules() -> None:
    v = stats.verdict
    assert v(_result(0.3, 0.1, 0.5), 0.01, 0.05, "greater", 0.2)[0] == "supported"
    # significant, but the estimate is below the smallest effect and the interval straddles it
    assert v(_result(0.15, 0.05, 0.25), 0.01, 0.05, "greater", 0.2)[0] == "inconclusive"
    # the whole interval below the smallest effect: contradicted, significant or not
    assert v(_result(0.05, 0.01, 0.09), 0.01, 0.05, "greater", 0.2)[0] == "contradicted"
    assert v(_result(0.0, -0.1, 0.1), 0.9, 0.05, "greater", 0.2)[0] == "contradicted"
    # the other direction
    assert v(_result(-0.3, -0.5, -0.1), 0.01, 0.05, "greater", 0.0)[0] == "contradicted"
    assert v(_result(-0.3, -0.5, -0.1), 0.01, 0.05, "less", 0.0)[0] == "supported"
    # not significant after adjustment
    assert v(_result(0.3, 0.1, 0.5), 0.2, 0.05, "greater", 0.0)[0] == "inconclusive"
