"""The best experts-per-token of a row of scores, and how far another k falls behind it: the SMoE paper's
"optimal number of activated experts" read off one seed's scores (papers/004, section 2.1.2: trained at
each k, figures 1-2; section 2.2.1: one pretrained model run at each experts-per-token, Table 1).

A row maps k to a score (an accuracy, higher is better; a perplexity, lower is better). Both readings are
per run, so a claim can compare them between arms (docs/api.md, Claims): "the best k grows with the
task's difficulty" becomes the best k of the runs at a hard M against those at an easy M.
"""

from __future__ import annotations

import math
from collections.abc import Mapping


def _finite(row: Mapping[int, float]) -> dict[int, float]:
    return {k: v for k, v in row.items() if math.isfinite(v)}


def best_k(row: Mapping[int, float], higher_is_better: bool = True) -> int | None:
    """The k with the best score (004 §2.1.2's "optimal number of activated experts" of one run); ties go
    to the smallest k, the cheaper routing: equal scores are no evidence that more experts help. Scores
    that are not finite are skipped; None when none is finite."""
    row = _finite(row)
    if not row:
        return None
    best = max(row.values()) if higher_is_better else min(row.values())
    return min(k for k, v in row.items() if v == best)


def regret(row: Mapping[int, float], k: int, higher_is_better: bool = True) -> float | None:
    """How far ``k``'s score falls behind the row's best score, in the score's units (>= 0; 0 when k is a
    best k): how much the default top-2 leaves on the table (004 §2.1.1: "top-2 ... starts to fall behind
    as the compositional task becomes harder"). None when k has no finite score."""
    row = _finite(row)
    if k not in row:
        return None
    best = max(row.values()) if higher_is_better else min(row.values())
    return (best - row[k]) if higher_is_better else (row[k] - best)
