"""The CAP phase (Figure 2): one ``cap_curve`` record per protocol, accuracy as the prediction is read
out from earlier layers, and the metrics ``cap/<region>_acc`` (section 5.1's early, middle and late
layers, averaged over the protocols as Figure 2; ``cap/early_minus_late_acc``) that claims compare."""

from __future__ import annotations

import torch
from torch import nn

from worker.core.cap import cap_curve, region_accuracy
from worker.core.carma.batches import batches
from worker.kinds.carma.common.plan import Plan
from worker.specs.carma.carma import CapCurve, CapPoint, CarmaSpec
from worker.tracking.context import RunContext


def cap_metrics(curves: dict[str, list[CapPoint]]) -> dict[str, float]:
    """The metrics of the CAP phase: ``cap/early_acc``, ``cap/middle_acc``, ``cap/late_acc`` (the regions
    that hold a start layer) and ``cap/early_minus_late_acc``, from each protocol's points."""
    regions = region_accuracy({p: [(x.depth, x.accuracy) for x in points] for p, points in curves.items()})
    return {f"cap/{region}_acc": value for region, value in regions.items()}


def report_cap(
    ctx: RunContext, spec: CarmaSpec, plan: Plan, model: nn.Module, device: torch.device, step: int
) -> None:
    """The records, and the region metrics at ``step`` (the training's last, as ``test_acc``)."""
    test = plan.splits.test
    items = test[: spec.cap.max_items] if spec.cap.max_items else test
    eval_batches = [b.to(device) for b in batches(items, spec.train.eval_batch_size, plan.pad_id)]
    curves = cap_curve(model, eval_batches, plan.cap_starts, spec.cap.protocols)
    by_protocol: dict[str, list[CapPoint]] = {}
    for protocol in spec.cap.protocols:
        points = [CapPoint(layer=L, depth=x, accuracy=a) for L, x, a in curves.accuracy(protocol)]
        by_protocol[protocol] = points
        ctx.log_result(
            CapCurve.model_validate(
                {
                    **plan.record_base(spec),
                    "protocol": protocol,
                    "num_layers": plan.lm.num_layers,
                    "items": curves.total,
                    "clean_acc": curves.clean_accuracy,
                    "points": points,
                }
            )
        )
    ctx.log_metrics(cap_metrics(by_protocol), step)
