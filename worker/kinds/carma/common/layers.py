"""The spec's layer ranges checked against the model's depth: CARMA's MI and stability ranges, the
CAP curve's starting layers."""

from __future__ import annotations

import numpy as np

from worker.core.carma.objective import default_layer_range
from worker.specs.carma.carma import CarmaSpec
from worker.tracking.context import RunError


def layer_range(spec: CarmaSpec, num_layers: int) -> tuple[int, int]:
    """The MI range (and the stability range unless ``carma.stability_layers``), blocks counted from 0."""
    first, last = spec.carma.layers or default_layer_range(num_layers)
    if last >= num_layers:
        raise RunError(
            f"carma.layers {[first, last]} is past the depth of {spec.model.name}: "
            f"{num_layers} blocks, 0..{num_layers - 1}"
        )
    return first, last


def stability_range(spec: CarmaSpec, num_layers: int) -> tuple[int, int] | None:
    """``carma.stability_layers`` checked against the depth; None = the MI range."""
    if spec.carma.stability_layers is None:
        return None
    first, last = spec.carma.stability_layers
    if last >= num_layers:
        raise RunError(
            f"carma.stability_layers {[first, last]} is past the depth of {spec.model.name}: "
            f"{num_layers} blocks, 0..{num_layers - 1}"
        )
    return first, last


def cap_layers(spec: CarmaSpec, num_layers: int) -> list[int]:
    if spec.cap.layers is not None:
        if max(spec.cap.layers) >= num_layers:
            raise RunError(
                f"cap.layers {spec.cap.layers} goes past the depth of {spec.model.name}: 0..{num_layers - 1}"
            )
        return sorted(set(spec.cap.layers))
    points = min(spec.cap.points, num_layers)
    return sorted({int(x) for x in np.linspace(0, num_layers - 1, points).round()})
