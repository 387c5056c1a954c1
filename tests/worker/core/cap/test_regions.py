"""CAP accuracy per region of depth (paper 003, section 5.1: early 0-25%, middle 25-75%, deeper 75-100%;
Figure 2: averaged over the protocols), against hand computations."""

from __future__ import annotations

import pytest

from worker.core.cap import region_accuracy, region_of


@pytest.mark.parametrize(
    ("depth", "region"),
    [
        (0.0, "early"),
        (0.25, "early"),
        (0.2501, "middle"),
        (0.5, "middle"),
        (0.7499, "middle"),
        (0.75, "late"),
        (1.0, "late"),
    ],
)
def test_each_depth_falls_in_one_region_the_shared_ends_going_outwards(depth: float, region: str) -> None:
    assert region_of(depth) == region


def test_a_depth_outside_0_1_is_refused() -> None:
    with pytest.raises(AssertionError, match="normalised depth"):
        region_of(1.5)


def test_regions_average_over_protocols_and_start_layers() -> None:
    # SmolLM2's 30 blocks, start layers 0, 7, 15, 22, 29: depths 0, 7/29 (early), 15/29, 22/29 (late), 1
    depths = [0.0, 7 / 29, 15 / 29, 22 / 29, 1.0]
    curves = {
        "mean": list(zip(depths, [0.10, 0.20, 0.30, 0.40, 0.50], strict=True)),
        "max": list(zip(depths, [0.00, 0.10, 0.20, 0.30, 0.60], strict=True)),
        "sum": list(zip(depths, [0.30, 0.30, 0.40, 0.50, 0.70], strict=True)),
    }
    out = region_accuracy(curves)
    assert set(out) == {"early", "middle", "late", "early_minus_late"}
    assert out["early"] == pytest.approx((0.10 + 0.20 + 0.00 + 0.10 + 0.30 + 0.30) / 6)  # 1/6
    assert out["middle"] == pytest.approx((0.30 + 0.20 + 0.40) / 3)  # 0.3
    assert out["late"] == pytest.approx((0.40 + 0.50 + 0.30 + 0.60 + 0.50 + 0.70) / 6)  # 0.5
    assert out["early_minus_late"] == pytest.approx(1 / 6 - 0.5)


def test_a_region_without_a_start_layer_is_left_out_and_so_is_the_difference() -> None:
    out = region_accuracy({"mean": [(0.0, 0.2), (0.5, 0.4)]})
    assert out == pytest.approx({"early": 0.2, "middle": 0.4})
    out = region_accuracy({"mean": [(0.0, 0.2), (1.0, 0.6)], "sum": [(0.0, 0.4), (1.0, 0.6)]})
    assert out == pytest.approx({"early": 0.3, "late": 0.6, "early_minus_late": -0.3})


def test_no_curve_or_an_empty_curve_is_an_error() -> None:
    with pytest.raises(AssertionError, match="no CAP curve"):
        region_accuracy({})
    with pytest.raises(AssertionError, match="the max curve has no point"):
        region_accuracy({"mean": [(0.0, 0.1)], "max": []})
