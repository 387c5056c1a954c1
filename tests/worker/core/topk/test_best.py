"""The best k of a row of scores and a k's regret (worker.core.topk.best), by hand."""

from __future__ import annotations

import math

import pytest

from worker.core.topk.best import best_k, regret


def test_best_k_is_the_argmax_of_an_accuracy_and_the_argmin_of_a_perplexity() -> None:
    row = {1: 0.70, 2: 0.77, 4: 0.79, 8: 0.78}
    assert best_k(row) == 4
    assert best_k({1: 12.0, 2: 9.5, 4: 9.9}, higher_is_better=False) == 2


def test_a_tie_goes_to_the_smaller_k() -> None:
    assert best_k({8: 0.5, 2: 0.5, 4: 0.25}) == 2
    assert best_k({4: 3.0, 1: 3.0}, higher_is_better=False) == 1


def test_scores_that_are_not_finite_are_skipped() -> None:
    assert best_k({1: math.nan, 2: 0.1, 4: math.inf}) == 2
    assert best_k({1: math.nan}) is None and best_k({}) is None
    assert regret({1: math.nan, 2: 0.3}, 1) is None


def test_regret_is_how_far_a_k_falls_behind_the_best_in_the_scores_units() -> None:
    row = {1: 0.70, 2: 0.77, 4: 0.79, 8: 0.78}
    assert regret(row, 2) == pytest.approx(0.02)
    assert regret(row, 1) == pytest.approx(0.09)
    assert regret(row, 4) == 0.0
    assert regret(row, 3) is None  # not in the row
    assert regret({1: 12.0, 2: 9.5, 4: 9.9}, 4, higher_is_better=False) == pytest.approx(0.4)
