"""The tuned model's accuracy: validation and test, the ``test_acc``/``test_loss`` metrics and the
``carma_eval`` record."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from worker.core.carma.evaluate import Evaluation, evaluate
from worker.kinds.carma.common.plan import Plan
from worker.specs.carma.carma import CarmaEval, CarmaSpec
from worker.tracking.context import RunContext


@dataclass(frozen=True)
class Tuning:
    """What training left for the record: the steps done, the best step restored (None: none was), the
    mean step seconds (None: untrained)."""

    steps: int = 0
    best_step: int | None = None
    mean_step: float | None = None


def carma_record(
    spec: CarmaSpec, plan: Plan, tuning: Tuning, validation: Evaluation, test: Evaluation
) -> CarmaEval:
    carma, splits = spec.variant == "carma", plan.splits
    return CarmaEval.model_validate(
        {
            **plan.record_base(spec),
            "gamma": spec.carma.gamma if carma else None,
            "eta": spec.carma.eta if carma else None,
            "layers": list(plan.layers) if carma else None,
            "stability_layers": list(plan.stability) if carma and plan.stability else None,
            "num_layers": plan.lm.num_layers,
            "train_size": len(splits.train),
            "validation_size": len(splits.validation),
            "test_size": len(splits.test),
            "steps": tuning.steps,
            "best_step": tuning.best_step,
            "validation_acc": validation.accuracy,
            "test_acc": test.accuracy,
            "test_loss": test.loss,
            "step_seconds": tuning.mean_step,
        }
    )


def report_scores(
    ctx: RunContext, spec: CarmaSpec, plan: Plan, tuning: Tuning, model: nn.Module, device: torch.device
) -> Evaluation:
    """Validation and test accuracy: the test's metrics at the last step and the ``carma_eval`` record.
    Returns the test's evaluation (the synonym phase starts from its correct items)."""
    batch_size = spec.train.eval_batch_size
    validation = evaluate(model, plan.splits.validation, batch_size, plan.pad_id, device)
    test = evaluate(model, plan.splits.test, batch_size, plan.pad_id, device)
    ctx.log_metrics({"test_acc": test.accuracy, "test_loss": test.loss}, tuning.steps)
    ctx.log_result(carma_record(spec, plan, tuning, validation, test))
    return test
