"""Fine-tuning under CARMA's objective (``ft``: lambda 0) with the best checkpoint by validation accuracy
kept, resumable from the run's checkpoint, its mean step time measured."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from worker.core.carma.batches import Batch, EpochStream
from worker.core.carma.evaluate import evaluate
from worker.core.carma.objective import CarmaConfig, CarmaObjective
from worker.core.carma.tasks import Splits
from worker.core.models import LoadedModel
from worker.core.train import StepOutput, TrainConfig, Trainer
from worker.kinds.carma.common.layers import stability_range
from worker.specs.carma.carma import CarmaSpec
from worker.tracking.context import RunContext


class BestCheckpoint:
    """The model weights of the best validation accuracy so far (on the CPU), its step and accuracy."""

    def __init__(self) -> None:
        self.step: int | None = None
        self.accuracy = -1.0
        self.state: dict[str, Tensor] | None = None

    def offer(self, model: nn.Module, step: int, accuracy: float) -> bool:
        if accuracy <= self.accuracy:
            return False
        self.step, self.accuracy = step, accuracy
        self.state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
        return True

    def state_dict(self) -> dict[str, Any]:
        return {"step": self.step, "accuracy": self.accuracy, "state": self.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.step, self.accuracy, self.state = state["step"], state["accuracy"], state["state"]


@dataclass(frozen=True)
class Trained:
    """What training left: the best checkpoint, the steps done, the mean step seconds, whether a cancel
    stopped it (its checkpoint saved)."""

    best: BestCheckpoint
    steps: int
    mean_step: float | None
    stopped: bool


class StepClock:
    """Seconds per training step, evaluation time left out: ``step_time`` per logged interval and the
    mean over the run's steps."""

    def __init__(self, step: int) -> None:
        self.last, self.step, self.seconds, self.counted = time.perf_counter(), step, 0.0, 0

    def tick(self, step: int) -> float | None:
        """The seconds per step since the last tick (None when no step was done), then a new interval."""
        now = time.perf_counter()
        done = step - self.step
        per_step = None
        if done > 0:
            per_step = (now - self.last) / done
            self.seconds += now - self.last
            self.counted += done
        self.last, self.step = now, step
        return per_step

    def skip(self) -> None:
        self.last = time.perf_counter()

    @property
    def mean(self) -> float | None:
        return self.seconds / self.counted if self.counted else None


def objective_of(spec: CarmaSpec, lm: LoadedModel, layers: tuple[int, int]) -> CarmaObjective:
    lam = 0.0 if spec.variant == "ft" else spec.carma.lambda_
    config = CarmaConfig(
        lam=lam,
        gamma=spec.carma.gamma,
        eta=spec.carma.eta,
        layers=layers,
        stability_layers=stability_range(spec, lm.num_layers),
        temperature=spec.carma.temperature,
        num_negatives=spec.carma.num_negatives,
    )
    return CarmaObjective(config, lm.num_layers)


def train_config(spec: CarmaSpec, stream: EpochStream) -> TrainConfig:
    """The trainer's config: ``epochs`` over the stream, at most ``max_steps``, linear decay to 0."""
    t = spec.train
    steps = stream.steps_per_epoch * t.epochs
    if t.max_steps is not None:
        steps = min(steps, t.max_steps)
    return TrainConfig(
        steps=steps,
        lr=t.lr,
        warmup_steps=t.warmup_steps,
        final_lr_fraction=0.0,
        schedule="linear",
        weight_decay=t.weight_decay,
        grad_clip=t.grad_clip,
        log_every=t.log_every,
        eval_interval=t.eval_interval,
        checkpoint_every=t.checkpoint_every,
    )


def resume(ctx: RunContext, trainer: Trainer, best: BestCheckpoint) -> None:
    """The trainer and the best checkpoint as the run's last checkpoint left them, if it has one."""
    resumed = ctx.load_checkpoint()
    if resumed is not None:
        state, step = resumed
        trainer.load_state_dict(state["trainer"])
        best.load_state_dict(state["best"])
        ctx.log(f"resumed from step {step}")


def train(
    spec: CarmaSpec,
    lm: LoadedModel,
    splits: Splits,
    layers: tuple[int, int],
    ctx: RunContext,
    device: torch.device,
    total_work: int,
) -> Trained:
    """Fine-tune (``ft``: lambda 0) or CARMA-tune, validating every ``eval_interval`` steps."""
    t = spec.train
    objective = objective_of(spec, lm, layers)
    pad_id = int(lm.tokenizer.pad_token_id)
    stream = EpochStream(splits.train, t.batch_size, pad_id, spec.seed)
    cfg = train_config(spec, stream)
    steps = cfg.steps

    def loss_fn(model: nn.Module, batch: Batch) -> tuple[Tensor, dict[str, Any]]:
        loss, metrics = objective(model, batch.to(device))
        return loss, dict(metrics)

    trainer = Trainer(lm.model, stream, loss_fn, cfg, device)
    best = BestCheckpoint()
    resume(ctx, trainer, best)
    clock = StepClock(trainer.step)

    def on_log(out: StepOutput) -> None:
        per_step = clock.tick(out.step)
        scalars = out.scalars()
        if per_step is not None:
            scalars["step_time"] = per_step
        ctx.log_metrics(scalars, out.step)
        ctx.progress(out.step, total_work, f"train step {out.step}/{steps} loss {scalars['loss']:.4f}")

    def validate(model: nn.Module, step: int) -> dict[str, float]:
        result = evaluate(model, splits.validation, t.eval_batch_size, pad_id, device)
        return {"validation_acc": result.accuracy, "validation_loss": result.loss}

    def on_eval(step: int, metrics: dict[str, float]) -> None:
        best.offer(lm.model, step, metrics["validation_acc"])
        ctx.log_metrics(metrics, step)
        clock.skip()  # evaluation time is no step time

    def save_checkpoint(state: dict[str, Any], step: int) -> None:
        if step < steps:  # the end needs no resume point: the evaluations after it are re-run
            ctx.save_checkpoint({"trainer": state, "best": best.state_dict()}, step)

    outcome = trainer.fit(
        on_log=on_log,
        evaluate=validate,
        on_eval=on_eval,
        save_checkpoint=save_checkpoint,
        should_stop=ctx.should_stop,
    )
    return Trained(best, outcome.step, clock.mean, outcome.stopped)
