"""Kind ``carma``: fine-tune a HuggingFace causal LM with or without CARMA (paper 003, section 3), keep the
best checkpoint by validation accuracy, then measure it: test accuracy (Figures 3-4), CAP curves per
protocol (Figure 2) and synonym consistency per rate (Tables 1, 4, 5). docs/experiments/carma.md.

Metrics: ``loss`` (eq. 8's total), ``task_loss``, ``mi_loss``, ``stability_loss``, ``carma_loss`` (eq. 7),
``mi_pairs``, ``train_acc`` (the batch), ``lr``, ``grad_norm``, ``step_time`` (seconds per step),
``validation_acc``, ``validation_loss``; at the end ``test_acc``, ``test_loss``, the CAP regions'
``cap/early_acc``, ``cap/middle_acc``, ``cap/late_acc``, ``cap/early_minus_late_acc`` and per synonym rate
``consist_syn/<rate %>``, ``consist_syn_cv/<rate %>`` (what claims compare). For ``ft`` the MI and
stability losses are computed without gradient so the variants' curves compare. Results: ``carma_eval``,
``cap_curve`` (one per protocol), ``synonym_consistency`` (one per rate).
"""

from __future__ import annotations

import torch

from worker.core.models import LoadedModel, ModelNotFound, load_model
from worker.kinds.carma.common.cap import report_cap
from worker.kinds.carma.common.plan import Plan, plan_of
from worker.kinds.carma.common.scores import Tuning, report_scores
from worker.kinds.carma.common.synonyms import report_synonyms
from worker.kinds.carma.common.training import train
from worker.runtime import confined
from worker.specs.carma.carma import CarmaSpec
from worker.tracking.context import RunContext, RunError


def set_up(spec: CarmaSpec, ctx: RunContext) -> torch.device:
    """The run's device and torch seed."""
    device = torch.device(ctx.device)
    torch.manual_seed(spec.seed)
    return device


def checked_files(spec: CarmaSpec) -> str | None:
    """Every file the spec names, checked before the model loads (a refusal costs nothing); the synonym
    map's path when the synonym phase reads one."""
    if spec.data.source in ("jsonl", "csv") and spec.data.path:
        confined.data_file(spec.data.path, "data.path")
    if spec.synonyms.enabled and spec.synonyms.source == "json" and spec.synonyms.map_path:
        return str(confined.data_file(spec.synonyms.map_path, "synonyms.map_path"))
    return None


def load(spec: CarmaSpec, device: torch.device) -> LoadedModel:
    dtype = torch.bfloat16 if spec.model.dtype == "bfloat16" else torch.float32
    try:
        lm = load_model(spec.model.name, seed=spec.seed, dtype=dtype)
    except ModelNotFound as exc:
        raise RunError(f"model.name: {exc}") from None
    lm.model.to(device)  # type: ignore[arg-type]
    return lm


def log_params(ctx: RunContext, spec: CarmaSpec, plan: Plan) -> None:
    lm, splits = plan.lm, plan.splits
    ctx.log_params(
        {
            **spec.model_dump(mode="json"),
            "derived": {
                "num_layers": lm.num_layers,
                "carma_layers": list(plan.layers),
                "carma_stability_layers": list(plan.stability or plan.layers),
                "lambda": plan.lam,
                "model_type": lm.model_type,
                "model_source": lm.source,
                "parameters": sum(p.numel() for p in lm.model.parameters()),
                "prompt": plan.template,
                "train_size": len(splits.train),
                "validation_size": len(splits.validation),
                "test_size": len(splits.test),
                "dropped_multi_token_label": plan.dropped.get("multi_token_label", 0),
                "dropped_too_long": plan.dropped.get("too_long", 0),
                "cap_layers": plan.cap_starts,
            },
        }
    )


def tune(spec: CarmaSpec, ctx: RunContext, plan: Plan, device: torch.device) -> Tuning | None:
    """Train (not ``original``) and restore the best checkpoint by validation accuracy; None when a
    cancel stopped training (its checkpoint saved)."""
    if not plan.trained:
        return Tuning()
    trained = train(spec, plan.lm, plan.splits, plan.layers, ctx, device, plan.total_work)
    if trained.stopped:
        ctx.log(f"stopped at step {trained.steps}; checkpoint saved")
        return None
    best = trained.best
    if best.state is None:
        return Tuning(trained.steps, None, trained.mean_step)
    plan.lm.model.load_state_dict(best.state)
    ctx.log(f"best validation accuracy {best.accuracy:.4f} at step {best.step}: restored")
    return Tuning(trained.steps, best.step, trained.mean_step)


def run(spec: CarmaSpec, ctx: RunContext) -> None:
    device = set_up(spec, ctx)
    synonym_map = checked_files(spec)
    plan = plan_of(spec, load(spec, device))
    log_params(ctx, spec, plan)
    tuning = tune(spec, ctx, plan, device)
    if tuning is None:
        return
    model = plan.lm.model.eval()
    test = report_scores(ctx, spec, plan, tuning, model, device)
    ctx.progress(plan.train_steps + 1, plan.total_work, f"test accuracy {test.accuracy:.4f}; CAP")
    if spec.cap.enabled:
        report_cap(ctx, spec, plan, model, device, tuning.steps)
    ctx.progress(plan.train_steps + 2, plan.total_work, "synonyms")
    if spec.synonyms.enabled:
        report_synonyms(ctx, spec, plan, model, test, synonym_map, device, tuning.steps)
    ctx.progress(plan.total_work, plan.total_work, f"done: test accuracy {test.accuracy:.4f}")
