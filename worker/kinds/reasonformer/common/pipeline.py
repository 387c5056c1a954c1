"""The tail both kinds share: train (evaluating every ``eval_interval`` steps), report the final
evaluation, save the model."""

from __future__ import annotations

from pathlib import Path

from torch import nn

from worker.kinds.reasonformer.common.eval_record import eval_record
from worker.kinds.reasonformer.common.evaluation import Evaluation, evaluate
from worker.kinds.reasonformer.common.prediction_rows import prediction_rows
from worker.kinds.reasonformer.common.provenance import Provenance
from worker.kinds.reasonformer.common.saving import save_model
from worker.kinds.reasonformer.common.training import Phase, Training, fit
from worker.tracking.context import RunContext


def report_final(
    ctx: RunContext, model: nn.Module, evaluation: Evaluation, provenance: Provenance, step: int
) -> None:
    """The final evaluation with its case studies: its metrics at ``step``, the ``reasonformer_eval``
    record, the ``routing`` one (not for plain T5) and the ``predictions`` table."""
    pred, metrics, routed = evaluate(
        model, evaluation, provenance, ctx.device, cases_per_task=evaluation.cases_per_task
    )
    ctx.log_metrics(metrics, step)
    ctx.log_result(eval_record(model, pred, provenance, step, evaluation.reasoning_of))
    if routed is not None:
        ctx.log_result(routed)
    ctx.log_examples("predictions", prediction_rows(model, pred))


def fit_evaluate_save(
    ctx: RunContext,
    model: nn.Module,
    training: Training,
    evaluation: Evaluation,
    provenance: Provenance,
    phase: Phase = Phase(),
) -> Path | None:
    """Train (evaluating during training without case studies), report the final evaluation and save the
    model under the run's ``MODEL_DIR``. Returns where it was saved, or None when the run was stopped (its
    checkpoint saved). ``phase``: where its checkpoints and progress sit in the run (after an in-run
    pre-training, ``init.pretrain``)."""

    def during(m: nn.Module, step: int) -> dict[str, float]:
        return evaluate(m, evaluation, provenance, ctx.device, cases_per_task=0)[1]

    _, outcome = fit(ctx, model, training, evaluate=during, phase=phase)
    if outcome.stopped:
        ctx.log(f"stopped at step {outcome.step}; checkpoint saved")
        return None
    report_final(ctx, model, evaluation, provenance, outcome.step)
    return save_model(model, evaluation.tokenizer, ctx.out_dir)
