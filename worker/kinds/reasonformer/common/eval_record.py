"""The ``reasonformer_eval`` record of a model's predictions: its scores per task with what identifies it
in Tables 1-3."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from torch import nn

from worker.core.reasonformer.build import model_reasoning, variant_of
from worker.core.reasonformer.evaluate import Predictions, task_scores
from worker.core.reasonformer.params import parameter_counts
from worker.kinds.reasonformer.common.model import label_of
from worker.kinds.reasonformer.common.provenance import Provenance
from worker.specs.reasonformer.common.results import ParameterCount, ReasonFormerEval, TaskMetric


def eval_record(
    model: nn.Module,
    pred: Predictions,
    provenance: Provenance,
    steps: int,
    reasoning_of: Callable[[str], str | None],
) -> ReasonFormerEval:
    """``reasoning_of`` names a task's reasoning type as Table 1 lists it (None where unknown)."""
    p = provenance
    counts = parameter_counts(model)
    scores = task_scores(pred)
    rc = model_reasoning(model)
    return ReasonFormerEval(
        stage=p.stage,
        label=label_of(model, p.pretrained),
        variant=variant_of(model),  # type: ignore[arg-type]
        activation=None if rc is None else ("full" if rc.k == rc.num_skills else "sparse"),
        top_k=None if rc is None else rc.k,
        num_skills=None if rc is None else rc.num_skills,
        depth=None if rc is None else rc.depth,
        adapters=bool(rc and rc.uses_adapters),
        stop_gate=bool(rc and rc.stop_gate),
        pretrained=p.pretrained,
        modularity=p.modularity,
        freeze=p.freeze,
        few_shot=p.few_shot,
        source_run_id=p.source_run_id,
        parameters=ParameterCount(total=counts.total, activated=counts.activated, tuned=counts.tuned),
        tasks=[
            TaskMetric(
                task=s.task,
                reasoning=reasoning_of(s.task),
                metric=s.metric,  # type: ignore[arg-type]
                value=s.value,
                value_norm=s.value_norm if s.metric == "accuracy" else None,
                count=s.count,
            )
            for s in scores
        ],
        average=float(np.mean([s.value for s in scores])) if scores else 0.0,
        steps=steps,
    )
