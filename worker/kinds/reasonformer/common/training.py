"""The training loop's glue: the spec's CPU threads and ``TrainConfig``, and the shared trainer fitted with
the run's checkpoints, metrics and progress."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from worker.core.reasonformer.training import make_loss_fn
from worker.core.train import FitOutcome, StepOutput, TrainConfig, Trainer
from worker.specs.reasonformer.common.training import TrainSpec
from worker.tracking.context import RunContext


@dataclass(frozen=True)
class Phase:
    """Where a training phase's records go in its run: the metric keys' ``prefix``, the checkpoint state's
    ``key``, and the ``offset`` of its steps in the run's checkpoints and progress out of ``total`` steps
    (None: the phase's own). A fine-tuning run that pre-trains first (``init.pretrain``) has two phases:
    pre-training (``pretrain/`` metrics, key ``pretrain``, steps 1..P) then fine-tuning (key ``trainer``,
    checkpoints and progress at P + its step), so the newest checkpoint is always the phase to resume."""

    prefix: str = ""
    key: str = "trainer"
    offset: int = 0
    total: int | None = None

    def keys(self, metrics: dict[str, float]) -> dict[str, float]:
        return {f"{self.prefix}{k}": v for k, v in metrics.items()} if self.prefix else metrics


@dataclass(frozen=True)
class Training:
    """What a kind trains on and how: its batches, the trainer's config, and whether the skill-routing
    loss is supervised (pre-training) or not (fine-tuning)."""

    batches: Any
    config: TrainConfig
    routing_loss: bool


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


def fit(
    ctx: RunContext,
    model: nn.Module,
    training: Training,
    evaluate: Callable[[nn.Module, int], dict[str, float]] | None = None,
    phase: Phase = Phase(),
) -> tuple[Trainer, FitOutcome]:
    """The shared trainer around the kind's model and batches, resumed from the run's checkpoint when it
    is this ``phase``'s; ``evaluate`` runs every ``eval_interval`` steps (none when 0)."""
    cfg = training.config
    device = torch.device(ctx.device)
    loss_fn = make_loss_fn(device, routing_loss=training.routing_loss)
    trainer = Trainer(model, training.batches, loss_fn, cfg, device)
    resumed = ctx.load_checkpoint()
    if resumed is not None and phase.key in resumed[0]:
        state, step = resumed
        trainer.load_state_dict(state[phase.key])
        ctx.log(f"resumed {phase.prefix}from step {step - phase.offset}")
    total = phase.total if phase.total is not None else cfg.steps

    def on_log(out: StepOutput) -> None:
        scalars = out.scalars()
        ctx.log_metrics(phase.keys(scalars), out.step)
        done = phase.offset + out.step
        ctx.progress(done, total, f"{phase.prefix}step {out.step}/{cfg.steps} loss {scalars['loss']:.4f}")

    def save_checkpoint(state: dict[str, Any], step: int) -> None:
        ctx.save_checkpoint({phase.key: state}, phase.offset + step)

    outcome = trainer.fit(
        on_log=on_log,
        evaluate=evaluate if cfg.eval_interval > 0 else None,
        on_eval=lambda step, metrics: ctx.log_metrics(phase.keys(metrics), step),
        save_checkpoint=save_checkpoint,
        should_stop=ctx.should_stop,
    )
    return trainer, outcome
