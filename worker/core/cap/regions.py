"""CAP accuracy per region of depth, the reading of paper 003, section 5.1 ("Early layers (0-25%) benefit
the most ... Middle layers (25-75%) ... Deeper layers (75-100%) show minimal benefits") and Figure 2 (the
accuracy averaged over the three protocols, Mean, Max and Sum CAP, per normalised layer position).

A region's accuracy is the mean over the protocols and over the start layers whose normalised depth
L / (n - 1) falls in it. The paper gives the bounds as closed ranges that share their ends; here a depth of
exactly 0.25 is early and exactly 0.75 is late (each end goes to the outer region, so early and late are
never empty when the curve has its first and last layers). ``early_minus_late`` (early - late) is how much
more pooling from the early layers costs than pooling from the late ones: the paper's "CARMA helps early,
less late" is CARMA's ``early_minus_late`` above FT's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

EARLY_END = 0.25  # section 5.1: early layers are 0-25% of the depth
LATE_START = 0.75  # section 5.1: deeper layers are 75-100%
REGIONS = ("early", "middle", "late")


def region_of(depth: float) -> str:
    """``early`` for a normalised depth <= 0.25, ``late`` for >= 0.75, ``middle`` between."""
    assert 0.0 <= depth <= 1.0, f"a normalised depth is in [0, 1], got {depth}"
    if depth <= EARLY_END:
        return "early"
    if depth >= LATE_START:
        return "late"
    return "middle"


def region_accuracy(curves: Mapping[str, Sequence[tuple[float, float]]]) -> dict[str, float]:
    """``{region: accuracy}`` from ``{protocol: [(normalised depth, accuracy), ...]}``: the mean over the
    protocols and over the start layers in each region (Figure 2's average), for the regions that hold a
    point; ``early_minus_late`` when both ends do."""
    assert curves, "no CAP curve"
    points: dict[str, list[float]] = {name: [] for name in REGIONS}
    for protocol, curve in curves.items():
        assert curve, f"the {protocol} curve has no point"
        for depth, accuracy in curve:
            points[region_of(depth)].append(accuracy)
    out = {name: sum(values) / len(values) for name, values in points.items() if values}
    if "early" in out and "late" in out:
        out["early_minus_late"] = out["early"] - out["late"]
    return out
