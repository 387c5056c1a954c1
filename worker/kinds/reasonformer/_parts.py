"""What the kinds ``reasonformer_pretrain`` and ``reasonformer_finetune`` share: spec -> core objects,
training, evaluation and the result records (``reasonformer_eval``, ``routing``). Not a kind itself."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from transformers import PreTrainedModel

from worker.core.reasonformer.analysis import TaskRouting, summarize_routing
from worker.core.reasonformer.build import MODEL_DIR, T5_VARIANT, model_reasoning, variant_of
from worker.core.reasonformer.config import ReasoningConfig
from worker.core.reasonformer.data.batching import Seq2SeqBatch, collate
from worker.core.reasonformer.data.example import Example
from worker.core.reasonformer.data.synthetic import PRIMITIVE_NAMES, SkillSuite, SuiteConfig
from worker.core.reasonformer.data.tokenizer import TextTokenizer
from worker.core.reasonformer.evaluate import Predictions, eval_metrics, predict_eval, task_scores
from worker.core.reasonformer.model import ReasonFormerForConditionalGeneration
from worker.core.reasonformer.params import parameter_counts
from worker.core.reasonformer.training import make_loss_fn
from worker.core.train import FitOutcome, StepOutput, TrainConfig, Trainer
from worker.specs.reasonformer._parts import (
    ModelSpec,
    ParameterCount,
    ReasonFormerEval,
    Routing,
    RoutingCase,
    RoutingCaseStep,
    TaskMetric,
    TaskRoutingRecord,
    TrainSpec,
)
from worker.specs.suite import SuiteSpec
from worker.tracking.context import RunContext

DISPLAY = {"shared": "Shared", "private": "Private", "single": "Single", "morm": "MoRM", "t5": "T5"}


def reasoning_config(model: ModelSpec, skills: Sequence[str]) -> ReasoningConfig | None:
    """The core's ReasoningConfig of a model spec (None for plain T5)."""
    if model.variant == T5_VARIANT:
        return None
    return ReasoningConfig(
        skills=tuple(skills),
        variant=model.variant,  # type: ignore[arg-type]  # t5 returned above
        depth=model.resolved_depth(),
        representation_layers=model.representation_layers,
        module_layers=model.module_layers,
        top_k=model.top_k,
        adapter_bottleneck=model.adapter_bottleneck if model.variant == "shared" else None,
        stop_gate=model.stop_gate and model.variant != "morm",  # MoRM: a mixture, no stop gate
        routing_loss_weight=model.resolved_routing_loss_weight(),
        router_hidden=model.router_hidden,
        general_skill=model.general_skill if model.general_skill in skills else None,
        dispatch=model.dispatch,
    )


def suite_of(spec: SuiteSpec) -> SkillSuite:
    return SkillSuite(
        SuiteConfig(
            min_len=spec.min_len,
            max_len=spec.max_len,
            heldout_fraction=spec.heldout_fraction,
            split_seed=spec.split_seed,
            primitive_fraction=spec.primitive_fraction,
        )
    )


def set_threads(t: TrainSpec, device: str) -> None:
    """The spec's CPU thread count (a worker runs one job per process, so this is the run's alone)."""
    if t.threads is not None and device == "cpu":
        torch.set_num_threads(t.threads)


def train_config(t: TrainSpec) -> TrainConfig:
    return TrainConfig(
        steps=t.steps,
        lr=t.lr,
        warmup_steps=round(t.warmup_ratio * t.steps),
        final_lr_fraction=t.final_lr_fraction,
        weight_decay=t.weight_decay,
        grad_clip=t.grad_clip,
        bf16=t.bf16,
        compile=t.compile,
        log_every=t.log_every,
        eval_interval=t.eval_interval,
        checkpoint_every=t.checkpoint_every,
    )


def batch_maker(
    tokenizer: TextTokenizer, skills: Sequence[str], depth: int, max_source: int, max_target: int
) -> Callable[[list[Example]], Seq2SeqBatch]:
    def make(examples: list[Example]) -> Seq2SeqBatch:
        return collate(
            examples, tokenizer, skills=skills, depth=depth, max_source=max_source, max_target=max_target
        )

    return make


def label_of(model: nn.Module, pretrained: bool) -> str:
    """Table 1's column names: T5 / RPT-T5, MoRM (S) / RPT-MoRM (S), Shared (S) / Shared (F), and
    " w/o RPT" for a ReasonFormer that skipped pre-training (Table 2)."""
    rc = model_reasoning(model)
    if rc is None:
        return "RPT-T5" if pretrained else "T5"
    variant = rc.variant
    activation = "(F)" if rc.k == rc.num_skills else "(S)"
    if variant == "morm":
        return f"{'RPT-' if pretrained else ''}MoRM {activation}"
    return f"{DISPLAY[variant]} {activation}{'' if pretrained else ' w/o RPT'}"


def fit(
    ctx: RunContext,
    model: nn.Module,
    batches: Any,
    cfg: TrainConfig,
    *,
    routing_loss: bool,
    evaluate: Callable[[nn.Module, int], dict[str, float]] | None = None,
) -> tuple[Trainer, FitOutcome]:
    """The shared trainer around the kind's model and batches, resumed from the run's checkpoint."""
    device = torch.device(ctx.device)
    trainer = Trainer(model, batches, make_loss_fn(device, routing_loss=routing_loss), cfg, device)
    resumed = ctx.load_checkpoint()
    if resumed is not None:
        state, step = resumed
        trainer.load_state_dict(state["trainer"])
        ctx.log(f"resumed from step {step}")

    def on_log(out: StepOutput) -> None:
        scalars = out.scalars()
        ctx.log_metrics(scalars, out.step)
        ctx.progress(out.step, cfg.steps, f"step {out.step}/{cfg.steps} loss {scalars['loss']:.4f}")

    def save_checkpoint(state: dict[str, Any], step: int) -> None:
        ctx.save_checkpoint({"trainer": state}, step)

    outcome = trainer.fit(
        on_log=on_log,
        evaluate=evaluate if cfg.eval_interval > 0 else None,
        on_eval=lambda step, metrics: ctx.log_metrics(metrics, step),
        save_checkpoint=save_checkpoint,
        should_stop=ctx.should_stop,
    )
    return trainer, outcome


def run_predictions(
    model: nn.Module,
    examples: Sequence[Example],
    tokenizer: TextTokenizer,
    t: TrainSpec,
    max_source: int,
    device: str,
) -> Predictions:
    return predict_eval(
        model,
        examples,
        tokenizer,
        batch_size=t.eval_batch_size,
        max_source=max_source,
        max_new_tokens=t.max_new_tokens,
        device=device,
    )


def eval_record(
    *,
    stage: str,
    model: nn.Module,
    pred: Predictions,
    pretrained: bool,
    modularity: bool,
    freeze: str,
    steps: int,
    reasoning_of: Callable[[str], str | None],
    few_shot: str | None = None,
    source_run_id: int | None = None,
) -> ReasonFormerEval:
    counts = parameter_counts(model)
    scores = task_scores(pred)
    rc = model_reasoning(model)
    return ReasonFormerEval(
        stage=stage,  # type: ignore[arg-type]
        label=label_of(model, pretrained),
        variant=variant_of(model),  # type: ignore[arg-type]
        activation=None if rc is None else ("full" if rc.k == rc.num_skills else "sparse"),
        top_k=None if rc is None else rc.k,
        num_skills=None if rc is None else rc.num_skills,
        depth=None if rc is None else rc.depth,
        adapters=bool(rc and rc.uses_adapters),
        stop_gate=bool(rc and rc.stop_gate),
        pretrained=pretrained,
        modularity=modularity,
        freeze=freeze,  # type: ignore[arg-type]
        few_shot=few_shot,
        source_run_id=source_run_id,
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


def _weighted(routings: Sequence[TaskRouting], attr: str) -> float | None:
    pairs = [(getattr(r, attr), r.count) for r in routings if getattr(r, attr) is not None]
    total = sum(n for _, n in pairs)
    return sum(v * n for v, n in pairs) / total if total else None


def _instances(routings: Sequence[TaskRouting], attr: str) -> int | None:
    """The instances ``_weighted(routings, attr)`` is a proportion of (for its 95% interval)."""
    total = sum(r.count for r in routings if getattr(r, attr) is not None)
    return total or None


def routing_record(
    *,
    stage: str,
    model: nn.Module,
    pred: Predictions,
    pretrained: bool,
    cases_per_task: int,
    seed: int,
    regroup: Callable[[Example], str] | None = None,
    suite: SkillSuite | None = None,
) -> tuple[Routing, list[TaskRouting]] | None:
    """The ``routing`` record of a ReasonFormer's predictions (None for plain T5). ``regroup`` renames an
    example's task for the analysis (the synthetic suite: by program, whose order is known)."""
    if not isinstance(model, ReasonFormerForConditionalGeneration) or not pred.probs:
        return None
    rc = model.reasoning
    examples = [
        Example(regroup(e), e.input, e.output, e.skills, e.options, e.answer) if regroup else e
        for e in pred.examples
    ]
    routings = summarize_routing(
        examples,
        pred.probs,
        pred.stop_gates,
        rc.skills,
        rc.general_skill,
        predictions=pred.predictions,
        cases_per_task=cases_per_task,
        seed=seed,
    )
    non_general = [s for s in rc.skills if s != rc.general_skill]
    single = [r for r in routings if r.task in PRIMITIVE_NAMES] if suite else []
    trained = {">".join(p) for p in suite.train_programs} if suite else set()
    heldout = {">".join(p) for p in suite.heldout_programs} if suite else set()
    record = Routing(
        stage=stage,  # type: ignore[arg-type]
        label=label_of(model, pretrained),
        variant=rc.variant,  # type: ignore[arg-type]
        skills=list(rc.skills),
        depth=rc.depth,
        top_k=rc.k,
        general_skill=rc.general_skill,
        chance=1.0 / len(non_general) if non_general else None,
        skill_match=_weighted(single, "match"),
        order_match_trained=_weighted([r for r in routings if r.task in trained], "order_match"),
        order_match_heldout=_weighted([r for r in routings if r.task in heldout], "order_match"),
        skill_match_n=_instances(single, "match"),
        order_match_trained_n=_instances([r for r in routings if r.task in trained], "order_match"),
        order_match_heldout_n=_instances([r for r in routings if r.task in heldout], "order_match"),
        tasks=[
            TaskRoutingRecord(
                task=r.task,
                count=r.count,
                weights=r.weights,
                stop_gates=r.stop_gates,
                expected=r.expected,
                step_match=r.step_match,
                match=r.match,
                order_match=r.order_match,
                cases=[
                    RoutingCase(
                        input=c.input,
                        target=c.target,
                        prediction=c.prediction,
                        expected=list(c.expected),
                        steps=[
                            RoutingCaseStep(
                                skills=list(s.skills), weights=list(s.weights), stop_gate=s.stop_gate
                            )
                            for s in c.steps
                        ],
                    )
                    for c in r.cases
                ],
            )
            for r in routings
        ],
    )
    return record, routings


def routing_metrics(record: Routing) -> dict[str, float]:
    out: dict[str, float] = {}
    for key in ("skill_match", "order_match_trained", "order_match_heldout"):
        value = getattr(record, key)
        if value is not None:
            out[f"routing/{key}"] = value
    return out


def evaluate(
    model: nn.Module,
    examples: Sequence[Example],
    tokenizer: TextTokenizer,
    t: TrainSpec,
    max_source: int,
    device: str,
    *,
    stage: str,
    pretrained: bool,
    cases_per_task: int,
    seed: int,
    suite: SkillSuite | None,
    regroup: Callable[[Example], str] | None = None,
) -> tuple[Predictions, dict[str, float], Routing | None]:
    """One evaluation of either kind: the predictions, their ``eval/*`` metrics with the ``routing/*``
    ones merged in, and the ``routing`` record (None for plain T5). Used during training (no case
    studies) and at the end."""
    pred = run_predictions(model, examples, tokenizer, t, max_source, device)
    metrics = eval_metrics(pred)
    routed = routing_record(
        stage=stage,
        model=model,
        pred=pred,
        pretrained=pretrained,
        cases_per_task=cases_per_task,
        seed=seed,
        regroup=regroup,
        suite=suite,
    )
    if routed is None:
        return pred, metrics, None
    metrics.update(routing_metrics(routed[0]))
    return pred, metrics, routed[0]


def prediction_rows(model: nn.Module, pred: Predictions) -> list[dict[str, Any]]:
    """The per-example table ``predictions``: per evaluation instance its input, prediction, gold answer
    and whether it is right; for a ReasonFormer also, per reasoning step, the skills the router
    activated (the top-k of its distribution, or every skill when routing is dense), the distribution
    and the stop gate."""
    rc = model.reasoning if isinstance(model, ReasonFormerForConditionalGeneration) else None
    rows = []
    for i, e in enumerate(pred.examples):
        row: dict[str, Any] = {
            "key": f"{e.task}/{i}",
            "task": e.task,
            "input": e.input,
            "prediction": pred.predictions[i] if i < len(pred.predictions) else None,
            "gold": e.output,
            "correct": pred.correct[i] if i < len(pred.correct) else None,
        }
        if e.options:
            row["options"] = list(e.options)
        if rc is not None and i < len(pred.probs):
            probs = pred.probs[i].float().tolist()  # [S, n]
            gates = pred.stop_gates[i] if i < len(pred.stop_gates) else None
            gate_values = gates.float().tolist() if gates is not None else None
            steps = []
            for step, dist in enumerate(probs):
                order = sorted(range(len(dist)), key=dist.__getitem__, reverse=True)
                chosen = order[: rc.top_k] if rc.top_k is not None else order
                steps.append(
                    {
                        "step": step + 1,
                        "skills": [rc.skills[n] for n in chosen],
                        "probs": {rc.skills[n]: round(p, 4) for n, p in enumerate(dist)},
                        "stop_gate": None if gate_values is None else round(gate_values[step], 4),
                    }
                )
            row["routing"] = steps
        rows.append(row)
    return rows


def save_model(model: nn.Module, tokenizer: TextTokenizer, out_dir: Path) -> Path:
    path = out_dir / MODEL_DIR
    assert isinstance(model, PreTrainedModel), f"cannot save a {type(model).__name__}"
    model.save_pretrained(path)
    tokenizer.save(path)
    return path


def fit_evaluate_save(
    ctx: RunContext,
    model: nn.Module,
    tokenizer: TextTokenizer,
    batches: Any,
    t: TrainSpec,
    *,
    eval_examples: Sequence[Example],
    max_source: int,
    stage: str,
    pretrained: bool,
    routing_loss: bool,
    cases_per_task: int,
    seed: int,
    suite: SkillSuite | None,
    regroup: Callable[[Example], str] | None = None,
    modularity: bool,
    freeze: str,
    reasoning_of: Callable[[str], str | None],
    few_shot: str | None = None,
    source_run_id: int | None = None,
) -> Path | None:
    """The tail both kinds share: train (evaluating every ``eval_interval`` steps, no case studies),
    then the final evaluation with ``cases_per_task`` case studies: its metrics, the ``reasonformer_eval``
    record and the ``routing`` one (not for plain T5), and the model saved under the run's ``MODEL_DIR``.
    Returns where the model was saved, or None when the run was stopped (its checkpoint saved)."""

    def evaluation(m: nn.Module, cases: int) -> tuple[Predictions, dict[str, float], Routing | None]:
        return evaluate(
            m,
            eval_examples,
            tokenizer,
            t,
            max_source,
            ctx.device,
            stage=stage,
            pretrained=pretrained,
            cases_per_task=cases,
            seed=seed,
            suite=suite,
            regroup=regroup,
        )

    def during(m: nn.Module, step: int) -> dict[str, float]:
        return evaluation(m, 0)[1]

    _, outcome = fit(ctx, model, batches, train_config(t), routing_loss=routing_loss, evaluate=during)
    if outcome.stopped:
        ctx.log(f"stopped at step {outcome.step}; checkpoint saved")
        return None

    pred, metrics, routed = evaluation(model, cases_per_task)
    ctx.log_metrics(metrics, outcome.step)
    ctx.log_result(
        eval_record(
            stage=stage,
            model=model,
            pred=pred,
            pretrained=pretrained,
            modularity=modularity,
            freeze=freeze,
            steps=outcome.step,
            reasoning_of=reasoning_of,
            few_shot=few_shot,
            source_run_id=source_run_id,
        )
    )
    if routed is not None:
        ctx.log_result(routed)
    ctx.log_examples("predictions", prediction_rows(model, pred))
    return save_model(model, tokenizer, ctx.out_dir)
