"""Skill-Mix's aggregation and the six grading metrics of paper 004, appendix A.3.1 (copied there from
Skill-Mix, its section C). A points vector holds k + 3 ones and zeros in the rubric's order: the k skills,
then topic, sense, sentence limit (``rubric.criteria``).

Per generated text: majority vote per criterion over the gradings (A.3.1: "For each criterion, we then
collect the majority vote among the three grading rounds"; a tie gives 0, REFERENCE.md); the six metrics;
the maximum of each metric over the generations of a combination (A.3.1, last paragraph; per metric, so
two metrics may come from different generations); the mean over combinations with its standard error
std(ddof=1)/sqrt(n) (the +- of Table 1 and Figure 6; only ddof=1 reproduces the published cells)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

METRICS = (
    "full_marks",
    "all_skills",
    "skill_fraction",
    "total_score",
    "total_skill_score",
    "rescaled_score",
)


def majority(gradings: Sequence[Sequence[int]]) -> list[int]:
    """Per criterion, 1 when more than half of the gradings award it (paper 004 A.3.1; a tie is 0)."""
    assert gradings, "majority of no gradings"
    n = len(gradings)
    width = len(gradings[0])
    assert all(len(g) == width for g in gradings), f"gradings of different lengths: {gradings}"
    return [1 if 2 * sum(g[i] for g in gradings) > n else 0 for i in range(width)]


def text_metrics(points: Sequence[int], k: int) -> dict[str, float]:
    """The six metrics of one text's (voted) points, paper 004 appendix A.3.1:

    - full_marks: 1 if all k + 3 points are earned;
    - all_skills: 1 if the k skill points are earned and at least 2 of the other 3;
    - skill_fraction: the fraction of the k skill points if all 3 other points are earned, else 0;
    - total_score: the sum of the points;
    - total_skill_score: the sum of the k skill points;
    - rescaled_score: (c / (k+3)) ** (k+3), c the total score.
    """
    assert len(points) == k + 3, f"k={k} needs {k + 3} points, got {list(points)}"
    skills, others = sum(points[:k]), sum(points[k:])
    total = skills + others
    return {
        "full_marks": float(total == k + 3),
        "all_skills": float(skills == k and others >= 2),
        "skill_fraction": skills / k if others == 3 else 0.0,
        "total_score": float(total),
        "total_skill_score": float(skills),
        "rescaled_score": (total / (k + 3)) ** (k + 3),
    }


def best_of(generations: Sequence[dict[str, float]]) -> dict[str, float]:
    """Per metric, the maximum over a combination's generations (paper 004 A.3.1)."""
    assert generations, "a combination without generations"
    return {m: max(g[m] for g in generations) for m in METRICS}


@dataclass(frozen=True)
class MeanStderr:
    mean: float
    stderr: float | None  # None for one combination: the spread of one value is undefined


def mean_stderr(values: Sequence[float]) -> MeanStderr:
    """Mean and std(ddof=1)/sqrt(n) over combinations (paper 004 Table 1's +-)."""
    n = len(values)
    assert n >= 1, "no combinations"
    mean = sum(values) / n
    if n == 1:
        return MeanStderr(mean, None)
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    return MeanStderr(mean, math.sqrt(variance) / math.sqrt(n))


def aggregate(per_combination: Sequence[dict[str, float]]) -> dict[str, MeanStderr]:
    return {m: mean_stderr([c[m] for c in per_combination]) for m in METRICS}


def skill_named(text: str, skill: str) -> bool:
    """Whether the text names the skill literally (case-insensitive, whole words; for a name with a
    parenthesis, its part before it too): Skill-Mix's optional filter zeroes such a skill point."""
    names = {skill.strip(), skill.split("(")[0].strip()}
    return any(re.search(r"(?<!\w)" + re.escape(n) + r"(?!\w)", text, re.IGNORECASE) for n in names if n)


def filter_named_skills(points: Sequence[int], text: str, skills: Sequence[str]) -> list[int]:
    """The points with every skill point zeroed whose skill the text names explicitly."""
    out = list(points)
    for i, name in enumerate(skills):
        if skill_named(text, name):
            out[i] = 0
    return out
