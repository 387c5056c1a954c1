"""The six metrics of paper 004 A.3.1, the vote, the max over generations and the mean +- stderr, against
hand computations on a fixed table, and against published cells of Figure 6."""

from __future__ import annotations

import math

import numpy as np
import pytest

from worker.core.skillmix.metrics import (
    aggregate,
    best_of,
    filter_named_skills,
    majority,
    mean_stderr,
    skill_named,
    text_metrics,
)

K = 2  # 5 points: skill 1, skill 2, topic, sense, sentences
R5 = (3 / 5) ** 5  # rescaled score of a total of 3 out of 5
R4 = (4 / 5) ** 5

# combination -> generation -> the three gradings
TABLE = {
    "A": [
        [[1, 1, 1, 1, 1], [1, 0, 1, 1, 1], [1, 1, 1, 0, 1]],  # vote 11111
        [[0, 0, 1, 1, 1]] * 3,  # vote 00111
        [[1, 0, 1, 1, 0], [1, 0, 0, 1, 0], [0, 1, 1, 1, 0]],  # vote 10110
    ],
    "B": [
        [[0, 1, 1, 1, 1]] * 3,  # vote 01111
        [[1, 1, 1, 0, 0], [1, 1, 0, 0, 1], [1, 1, 1, 1, 0]],  # vote 11100
        [[1, 1, 0, 1, 1]] * 3,  # vote 11011
    ],
    "C": [[[0, 0, 0, 0, 0]] * 3] * 3,
}
# by hand, per generation: full, all skills, skill fraction, total, skill score, rescaled
BY_HAND = {
    "A": [(1, 1, 1.0, 5, 2, 1.0), (0, 0, 0.0, 3, 0, R5), (0, 0, 0.0, 3, 1, R5)],
    "B": [(0, 0, 0.5, 4, 1, R4), (0, 0, 0.0, 3, 2, R5), (0, 1, 0.0, 4, 2, R4)],
    "C": [(0, 0, 0.0, 0, 0, 0.0)] * 3,
}
NAMES = ("full_marks", "all_skills", "skill_fraction", "total_score", "total_skill_score", "rescaled_score")


def test_votes_and_metrics_of_every_generation_match_the_hand_table() -> None:
    votes = {c: [majority(g) for g in gens] for c, gens in TABLE.items()}
    assert votes["A"] == [[1, 1, 1, 1, 1], [0, 0, 1, 1, 1], [1, 0, 1, 1, 0]]
    assert votes["B"] == [[0, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 0, 1, 1]]
    for c, gens in votes.items():
        for points, expected in zip(gens, BY_HAND[c], strict=True):
            got = text_metrics(points, K)
            assert [got[n] for n in NAMES] == pytest.approx(list(expected))


def test_cell_is_the_mean_and_stderr_of_the_best_per_combination() -> None:
    best = [best_of([text_metrics(majority(g), K) for g in TABLE[c]]) for c in "ABC"]
    # best per combination, by hand: A (1, 1, 1, 5, 2, 1), B (0, 1, 0.5, 4, 2, R4), C zeros
    assert [best[1][n] for n in NAMES] == pytest.approx([0, 1, 0.5, 4, 2, R4])
    cell = aggregate(best)
    columns = {
        "full_marks": [1, 0, 0],
        "all_skills": [1, 1, 0],
        "skill_fraction": [1, 0.5, 0],
        "total_score": [5, 4, 0],
        "total_skill_score": [2, 2, 0],
        "rescaled_score": [1, R4, 0],
    }
    for name, values in columns.items():
        assert cell[name].mean == pytest.approx(sum(values) / 3)
        assert cell[name].stderr == pytest.approx(np.std(values, ddof=1) / math.sqrt(3))
    assert cell["total_score"].stderr == pytest.approx(
        math.sqrt(7) / math.sqrt(3)
    )  # std of 5, 4, 0 is sqrt 7


def test_a_tie_is_zero_and_one_combination_has_no_stderr() -> None:
    assert majority([[1, 0], [0, 1]]) == [0, 0]
    assert majority([[1, 1], [1, 0], [0, 0], [1, 1]]) == [1, 0]
    assert mean_stderr([0.4]).stderr is None


def test_published_cells_of_figure_6_are_reproduced() -> None:
    """DBRX, ept = 2, k = 1 (paper 004, Figure 6): full marks 0.60 +- 0.245, total 3.60 +- 0.245,
    rescaled 0.73 +- 0.167, skill score 1.00 +- 0.000: five combinations, three at 4/4 points and two at
    3/4 with the skill point earned."""
    best = [text_metrics(p, 1) for p in ([1, 1, 1, 1],) * 3 + ([1, 1, 1, 0], [1, 0, 1, 1])]
    cell = aggregate(best)
    assert (round(cell["full_marks"].mean, 2), round(cell["full_marks"].stderr or 0, 3)) == (0.6, 0.245)
    assert (round(cell["total_score"].mean, 2), round(cell["total_score"].stderr or 0, 3)) == (3.6, 0.245)
    assert (round(cell["rescaled_score"].mean, 2), round(cell["rescaled_score"].stderr or 0, 3)) == (
        0.73,
        0.167,
    )
    assert (cell["total_skill_score"].mean, cell["total_skill_score"].stderr) == (1.0, 0.0)
    # Table 1's 0.20 +- 0.200 is one of five
    one_of_five = mean_stderr([1, 0, 0, 0, 0])
    assert (one_of_five.mean, round(one_of_five.stderr or 0, 3)) == (0.2, 0.2)


def test_skill_name_filter_zeroes_only_named_skills() -> None:
    text = "The red herring of Folk Physics: a hyperbolic claim."
    skills = ["red herring", "folk physics (common knowledge physics)", "hyperbole"]
    assert [skill_named(text, s) for s in skills] == [True, True, False]  # "hyperbolic" is no "hyperbole"
    assert filter_named_skills([1, 1, 1, 1, 1, 0], text, skills) == [0, 0, 1, 1, 1, 0]
