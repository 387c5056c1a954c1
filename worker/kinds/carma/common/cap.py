"""The CAP phase (Figure 2): one ``cap_curve`` record per protocol, accuracy as the prediction is read
out from earlier layers."""

from __future__ import annotations

import torch
from torch import nn

from worker.core.cap import cap_curve
from worker.core.carma.batches import batches
from worker.kinds.carma.common.plan import Plan
from worker.specs.carma.carma import CapCurve, CapPoint, CarmaSpec
from worker.tracking.context import RunContext


def report_cap(ctx: RunContext, spec: CarmaSpec, plan: Plan, model: nn.Module, device: torch.device) -> None:
    test = plan.splits.test
    items = test[: spec.cap.max_items] if spec.cap.max_items else test
    eval_batches = [b.to(device) for b in batches(items, spec.train.eval_batch_size, plan.pad_id)]
    curves = cap_curve(model, eval_batches, plan.cap_starts, spec.cap.protocols)
    for protocol in spec.cap.protocols:
        points = [CapPoint(layer=L, depth=x, accuracy=a) for L, x, a in curves.accuracy(protocol)]
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
