"""Constituent-aware pooling (CAP): token -> word pooling from a start layer on, layer curves."""

from worker.core.cap.curve import CapCurves, cap_curve, cap_curve_naive, run_from_layer
from worker.core.cap.pooling import PROTOCOLS, Protocol, pool, token_groups
from worker.core.cap.regions import REGIONS, region_accuracy, region_of

__all__ = [
    "PROTOCOLS",
    "REGIONS",
    "CapCurves",
    "Protocol",
    "cap_curve",
    "cap_curve_naive",
    "pool",
    "region_accuracy",
    "region_of",
    "run_from_layer",
    "token_groups",
]
