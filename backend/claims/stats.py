"""The statistics of a claim: an arm's mean and interval, the tests of a comparison (paired t, Welch's t, a
percentile bootstrap), Holm's adjustment over a family, the runs a power calculation asks for, and the
verdict. Pure functions of counts, sums and sums of squares (what the database aggregates,
backend/claims/evaluate.py) or of the values themselves (the bootstrap); distributions from scipy.special
(Student's t and the normal: what scipy.stats' t and norm call, without its import cost at the API's start).

The formulas (tests/backend/test_claims.py checks each against scipy.stats and numpy computed there):

- an arm: mean = S / n, s^2 = (Q - S^2 / n) / (n - 1) (S the sum, Q the sum of squares), interval
  mean +- t(1 - alpha/2, n - 1) * s / sqrt(n);
- paired t (Student 1908; the one-sample t test of the per-seed differences d = x_arm - x_ref): effect =
  mean(d), t = mean(d) / (s_d / sqrt(n)), df = n - 1;
- Welch's t (Welch 1947, "The generalization of Student's problem when several different population
  variances are involved", Biometrika 34, eq. for the approximate degrees of freedom): effect = m_arm -
  m_ref, se^2 = s1^2/n1 + s2^2/n2, t = effect / se, df = se^4 / ((s1^2/n1)^2/(n1-1) + (s2^2/n2)^2/(n2-1));
- both two-sided: p = 2 * T_df(-|t|); the effect's interval effect +- t(1 - alpha/2, df) * se;
- the percentile bootstrap (Efron & Tibshirani 1993, An Introduction to the Bootstrap, ch. 13 for the
  percentile interval, ch. 15-16 for the test): B resamples of the pairs (paired) or of each arm on its
  own, the interval the alpha/2 and 1 - alpha/2 quantiles of the resampled effects, and the two-sided
  p = min(1, 2 * min((1 + #{effect* <= 0}) / (B + 1), (1 + #{effect* >= 0}) / (B + 1)));
- Holm (1979, "A simple sequentially rejective multiple test procedure", Scand. J. Statist. 6): the m
  p-values sorted p(1) <= ... <= p(m), adjusted p(i) = min(1, max over j <= i of (m - j + 1) * p(j));
- the needed n (Chow, Shao & Wang 2008, Sample Size Calculations in Clinical Research, 2nd ed., ch. 3: the
  one-sample / paired and the two-sample parallel tests for equality): the smallest n whose two-sided t
  test reaches the power, its power computed exactly from the noncentral t (df = n - 1 for pairs, 2(n - 1)
  for two arms of n; noncentrality delta / (s * sqrt(f / n)), f = 1 for pairs with s the differences' sd,
  f = 2 for two arms with s^2 the mean of the arms' variances); the search starts from the normal
  approximation n = f * s^2 * (z(1 - a/2) + z(power))^2 / delta^2. a = alpha / m, the family's Bonferroni
  level (the first step of Holm's procedure, the strictest one a comparison may face).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np


def _t_ppf(df: float, q: float) -> float:
    from scipy.special import stdtrit  # not at module level: the API's start does not pay for scipy

    return float(stdtrit(df, q))


def _t_cdf(df: float, x: float) -> float:
    from scipy.special import stdtr

    return float(stdtr(df, x))


def _z(q: float) -> float:
    from scipy.special import ndtri

    return float(ndtri(q))


def variance(n: int, total: float, squares: float) -> float:
    """The sample variance (ddof 1) from n, the sum and the sum of squares; 0 when rounding makes it
    negative."""
    return max((squares - total * total / n) / (n - 1), 0.0)


@dataclass(frozen=True)
class ArmStats:
    n: int
    mean: float | None
    std: float | None
    ci_low: float | None
    ci_high: float | None


def arm(n: int, total: float | None, squares: float | None, alpha: float) -> ArmStats:
    """An arm's mean, sd and (1 - alpha) Student-t interval of the mean; sd and interval null below 2."""
    if n == 0 or total is None or squares is None:
        return ArmStats(0, None, None, None, None)
    mean = total / n
    if n < 2:
        return ArmStats(n, mean, None, None, None)
    sd = math.sqrt(variance(n, total, squares))
    half = _t_ppf(n - 1, 1 - alpha / 2) * sd / math.sqrt(n)
    return ArmStats(n, mean, sd, mean - half, mean + half)


@dataclass(frozen=True)
class TestResult:
    effect: float
    ci_low: float
    ci_high: float
    p_value: float
    statistic: float | None
    df: float | None
    spread: float  # the sd a power calculation uses: the differences' (paired) or the arms' pooled


def _t_result(effect: float, se: float, df: float, alpha: float, spread: float) -> TestResult:
    if se == 0.0:  # no spread at all: the effect is exact
        p = 1.0 if effect == 0.0 else 0.0
        t = 0.0 if effect == 0.0 else math.copysign(math.inf, effect)
        return TestResult(effect, effect, effect, p, t, df, spread)
    t = effect / se
    p = min(1.0, 2.0 * _t_cdf(df, -abs(t)))
    half = _t_ppf(df, 1 - alpha / 2) * se
    return TestResult(effect, effect - half, effect + half, p, t, df, spread)


def paired_t(n: int, total: float, squares: float, alpha: float) -> TestResult:
    """The paired t test from the per-seed differences' count, sum and sum of squares (n >= 2)."""
    mean = total / n
    sd = math.sqrt(variance(n, total, squares))
    return _t_result(mean, sd / math.sqrt(n), n - 1, alpha, sd)


def welch_t(ref: ArmStats, other: ArmStats, alpha: float) -> TestResult:
    """Welch's t test of other - ref (both with n >= 2)."""
    assert ref.std is not None and other.std is not None and ref.mean is not None and other.mean is not None
    a, b = ref.std**2 / ref.n, other.std**2 / other.n
    se2 = a + b
    effect = other.mean - ref.mean
    df = float(ref.n + other.n - 2) if se2 == 0.0 else se2**2 / (a**2 / (ref.n - 1) + b**2 / (other.n - 1))
    spread = math.sqrt((ref.std**2 + other.std**2) / 2)
    return _t_result(effect, math.sqrt(se2), df, alpha, spread)


def bootstrap(
    ref: list[float], other: list[float], paired: bool, resamples: int, seed: int, alpha: float
) -> TestResult:
    """The percentile bootstrap of mean(other) - mean(ref); ``paired``: ``ref[i]`` and ``other[i]`` are one
    seed's pair and pairs are resampled together."""
    rng = np.random.default_rng(seed)
    x, y = np.asarray(ref, dtype=float), np.asarray(other, dtype=float)
    if paired:
        d = y - x
        idx = rng.integers(0, len(d), size=(resamples, len(d)))
        draws = d[idx].mean(axis=1)
        effect = float(d.mean())
        spread = float(d.std(ddof=1))
    else:
        draws = y[rng.integers(0, len(y), size=(resamples, len(y)))].mean(axis=1) - x[
            rng.integers(0, len(x), size=(resamples, len(x)))
        ].mean(axis=1)
        effect = float(y.mean() - x.mean())
        spread = math.sqrt((float(x.var(ddof=1)) + float(y.var(ddof=1))) / 2)
    low, high = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    below = (1 + int(np.count_nonzero(draws <= 0))) / (resamples + 1)
    above = (1 + int(np.count_nonzero(draws >= 0))) / (resamples + 1)
    p = min(1.0, 2 * min(below, above))
    return TestResult(effect, float(low), float(high), p, None, None, spread)


def holm(p_values: list[float | None]) -> list[float | None]:
    """Holm's adjusted p-values in the input's order; a hypothesis without a p-value yet (None) counts in m
    (as p = 1: the family's size does not shrink while data are missing) and stays None."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: (1.0 if p_values[i] is None else p_values[i], i))  # type: ignore[arg-type]
    out: list[float | None] = [None] * m
    running = 0.0
    for rank, i in enumerate(order):
        p = p_values[i]
        value = 1.0 if p is None else p
        running = max(running, min(1.0, (m - rank) * value))
        out[i] = None if p is None else running
    return out


def power(n: int, spread: float, delta: float, alpha: float, paired: bool) -> float:
    """The power of the two-sided t test at ``alpha`` with ``n`` pairs (``paired``) or ``n`` runs per arm, when
    the true effect is ``delta`` and the sd ``spread``: P(|T| > t(1 - alpha/2, df)) for T noncentral t with
    df = n - 1 (pairs) or 2(n - 1) (two arms) and noncentrality delta / (spread * sqrt(f / n))."""
    from scipy.special import nctdtr

    df = n - 1 if paired else 2 * (n - 1)
    nc = delta / (spread * math.sqrt((1.0 if paired else 2.0) / n))
    crit = _t_ppf(df, 1 - alpha / 2)
    return float(1.0 - nctdtr(df, nc, crit) + nctdtr(df, nc, -crit))


def needed_n(spread: float, delta: float, alpha: float, power_: float, paired: bool) -> int | None:
    """The smallest n (pairs when ``paired``, else runs per arm) whose two-sided t test at ``alpha`` reaches
    ``power_`` at the effect ``delta`` with sd ``spread`` (``power``: the noncentral t's exact power); the
    normal approximation (the module's docstring) only brackets the search. None when there is nothing to
    size for (no effect, no finite sd) or it would take more than a billion."""
    if delta <= 0 or not math.isfinite(spread) or not math.isfinite(delta):
        return None
    if spread == 0.0:
        return 2
    factor = 1.0 if paired else 2.0
    guess = factor * (spread / delta) ** 2 * (_z(1 - alpha / 2) + _z(power_)) ** 2
    high = max(2, math.ceil(guess))
    while power(high, spread, delta, alpha, paired) < power_:
        high *= 2
        if high > 1_000_000_000:
            return None
    low = 1  # power(low) < power_ or low < 2: the smallest n lies in (low, high]
    while high - low > 1:
        mid = (low + high) // 2
        if mid >= 2 and power(mid, spread, delta, alpha, paired) >= power_:
            high = mid
        else:
            low = mid
    return high


Verdict = Literal["supported", "contradicted", "inconclusive"]


def verdict(
    result: TestResult, p_adjusted: float, alpha: float, direction: str, min_effect: float
) -> tuple[Verdict, str]:
    """The verdict of one comparison and why. With s = +1 for ``greater`` and -1 for ``less``, the effect
    and its interval are read in the stated direction (s * effect):

    - supported: the adjusted p < alpha, the directed effect > 0 with its interval above 0, and the
      point estimate at least ``min_effect`` (the smallest effect must be reached by the estimate, not by
      the interval's lower end);
    - contradicted: the adjusted p < alpha with the directed interval below 0 (the other direction), or
      ``min_effect`` > 0 and the whole directed interval below it (an effect too small to be worth
      reporting, equivalence-style);
    - inconclusive otherwise."""
    s = 1.0 if direction == "greater" else -1.0
    effect = s * result.effect
    low, high = sorted((s * result.ci_low, s * result.ci_high))
    significant = p_adjusted < alpha
    if significant and effect > 0 and low > 0 and effect >= min_effect:
        return "supported", f"adjusted p {p_adjusted:.3g} < {alpha:g}, effect in the stated direction"
    if significant and high < 0:
        return "contradicted", f"adjusted p {p_adjusted:.3g} < {alpha:g}, effect in the opposite direction"
    if min_effect > 0 and high < min_effect:
        return "contradicted", f"the effect's interval lies below the smallest effect ({min_effect:g})"
    if significant and effect < min_effect:
        return "inconclusive", f"significant, but the effect is below the smallest effect ({min_effect:g})"
    return "inconclusive", f"adjusted p {p_adjusted:.3g} >= {alpha:g}"
