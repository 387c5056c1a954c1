"""The training loop shared by the experiment kinds: AdamW, linear warmup then cosine decay, optional
gradient clipping, bf16 autocast and ``torch.compile`` on CUDA, periodic evaluation, and exact
checkpoint/resume.

A kind supplies a model, a data stream (anything with ``next_batch``/``state_dict``/``load_state_dict``)
and a loss function ``loss_fn(model, batch) -> (loss, metrics)``; the ``Trainer`` owns the optimiser,
the schedule, the step counter and every RNG, so ``Trainer.state_dict()`` is everything a resumed run
needs to continue bit-for-bit (same device, same threads, same library versions).
"""

from __future__ import annotations

import contextlib
import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
import torch
from torch import Tensor, nn


class DataStream(Protocol):
    """An endless, seeded source of training batches whose position can be saved and restored."""

    def next_batch(self) -> Any: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


# A metric value: a float, or a detached scalar tensor read (one device sync) only on logging steps.
Scalar = float | Tensor
# loss_fn(model, batch) -> (scalar loss to minimise, detached metrics to log)
LossFn = Callable[[nn.Module, Any], tuple[Tensor, dict[str, Scalar]]]
# evaluate(model, step) -> metrics; runs under no_grad, eval mode and a forked RNG
EvalFn = Callable[[nn.Module, int], dict[str, float]]


@dataclass
class TrainConfig:
    steps: int
    lr: float = 1e-3
    # Linear warmup from 0 to lr, then cosine to final_lr_fraction * lr at ``steps`` (the SRAVEN reference:
    # 1000 warmup steps, cosine to 0.1 * lr; REFERENCE.md).
    warmup_steps: int = 1000
    final_lr_fraction: float = 0.1
    # "cosine" (the SRAVEN reference) or "linear": linear decay from lr to final_lr_fraction * lr after the
    # warmup (HF's get_linear_schedule_with_warmup with final_lr_fraction 0, as the CARMA reference trains)
    schedule: Literal["cosine", "linear"] = "cosine"
    # AdamW's decoupled weight decay (Loshchilov & Hutter 2019, Algorithm 2), applied by parameter role:
    # kernels and embeddings, never biases or norms (``decays``; the reference masks them).
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    grad_clip: float | None = None  # max global grad norm; None = no clipping (the SRAVEN reference)
    bf16: bool = False  # bf16 autocast, CUDA only (ignored on CPU)
    compile: bool = False  # torch.compile the model's forward, CUDA only (ignored on CPU)
    log_every: int = 1
    eval_interval: int = 0  # 0 = evaluate only at the end
    checkpoint_every: int = 0  # 0 = checkpoint only when stopping and at the end

    def __post_init__(self) -> None:
        assert self.steps >= 1, f"steps must be >= 1, got {self.steps}"
        assert self.lr > 0, f"lr must be > 0, got {self.lr}"
        assert self.warmup_steps >= 0, f"warmup_steps must be >= 0, got {self.warmup_steps}"
        assert 0.0 <= self.final_lr_fraction <= 1.0, (
            f"final_lr_fraction in [0, 1], got {self.final_lr_fraction}"
        )
        assert self.log_every >= 1, f"log_every must be >= 1, got {self.log_every}"


def lr_multiplier(step: int, cfg: TrainConfig) -> float:
    """Learning-rate factor for the update at 0-indexed ``step``: linear warmup over ``warmup_steps``
    (Goyal et al. 2017, section 2.2), then half-cosine decay (Loshchilov & Hutter 2017, SGDR, eq. 5) from 1
    to ``final_lr_fraction`` at ``cfg.steps`` (as optax's warmup_cosine_decay_schedule, which the SRAVEN
    reference uses), or with ``schedule="linear"`` a straight line to it (HF's linear schedule)."""
    if step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    decay_steps = max(1, cfg.steps - cfg.warmup_steps)
    progress = min(1.0, (step - cfg.warmup_steps) / decay_steps)
    if cfg.schedule == "linear":
        return 1.0 - (1.0 - cfg.final_lr_fraction) * progress
    cosine = 0.5 * (1.0 + math.cos(math.pi * progress))
    return cfg.final_lr_fraction + (1.0 - cfg.final_lr_fraction) * cosine


NORM_LAYERS: tuple[type[nn.Module], ...] = (
    nn.LayerNorm,
    nn.GroupNorm,
    nn.RMSNorm,
    nn.modules.batchnorm._BatchNorm,
)


def decays(module: nn.Module, name: str, param: nn.Parameter) -> bool:
    """Whether AdamW decays ``param`` (the direct parameter ``name`` of ``module``), by its role: kernels
    and embeddings decay; biases, normalisation scales and shifts, and whatever the module lists in its
    ``no_weight_decay`` (e.g. the stacked per-expert biases ``b1 [E, h]``, which are 2-D but biases) do
    not. The SRAVEN reference masks every 1-D parameter, so a 1-D parameter of no declared role does
    not decay either."""
    if name == "bias" or name in getattr(module, "no_weight_decay", ()):
        return False
    if isinstance(module, NORM_LAYERS):
        return False
    return param.ndim >= 2


def param_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """Two AdamW groups: weight decay on the parameters ``decays`` says, none on the rest."""
    decay: list[nn.Parameter] = []
    no_decay: list[nn.Parameter] = []
    seen: set[int] = set()
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if not param.requires_grad or id(param) in seen:  # a tied parameter joins one group
                continue
            seen.add(id(param))
            (decay if decays(module, name, param) else no_decay).append(param)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def make_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.AdamW:
    return torch.optim.AdamW(param_groups(model, cfg.weight_decay), lr=cfg.lr, betas=cfg.betas, eps=cfg.eps)


def make_scheduler(optimizer: torch.optim.Optimizer, cfg: TrainConfig) -> torch.optim.lr_scheduler.LambdaLR:
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_multiplier(step, cfg))


def rng_state() -> dict[str, Any]:
    """Every global RNG a training step may touch (torch CPU and CUDA, python, numpy), in a form that
    ``torch.load(weights_only=True)`` accepts (tensors, lists, ints, strings)."""
    np_state = np.random.get_state(legacy=True)
    assert isinstance(np_state, tuple)
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "python": _to_lists(random.getstate()),
        "numpy": [np_state[0], np_state[1].tolist(), int(np_state[2]), int(np_state[3]), float(np_state[4])],
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(_to_tuples(state["python"]))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _to_lists(x: Any) -> Any:
    return [_to_lists(v) for v in x] if isinstance(x, tuple | list) else x


def _to_tuples(x: Any) -> Any:
    return tuple(_to_tuples(v) for v in x) if isinstance(x, list) else x


@dataclass
class StepOutput:
    step: int  # steps done after this update (1-based)
    loss: Tensor  # detached scalar
    lr: float  # the learning rate this update used
    grad_norm: Tensor | None  # global grad norm before clipping (only computed when clipping)
    metrics: dict[str, Scalar]

    def scalars(self) -> dict[str, float]:
        """``loss``, ``lr``, ``grad_norm`` (when clipping) and the loss function's metrics as floats."""
        out = {"loss": float(self.loss), "lr": self.lr}
        if self.grad_norm is not None:
            out["grad_norm"] = float(self.grad_norm)
        out.update({key: float(value) for key, value in self.metrics.items()})
        return out


@dataclass
class FitOutcome:
    step: int  # steps done when fit returned
    stopped: bool  # True when should_stop() ended the run early (a checkpoint was saved)
    last_eval: dict[str, float]


class Trainer:
    """Owns optimiser, schedule, step counter and RNGs around a model, a stream and a loss function.

    ``model`` is kept uncompiled for ``state_dict``; with ``cfg.compile`` on CUDA the loss function
    receives a compiled wrapper of it instead.
    """

    def __init__(
        self,
        model: nn.Module,
        stream: DataStream,
        loss_fn: LossFn,
        cfg: TrainConfig,
        device: torch.device | str = "cpu",
    ) -> None:
        self.device = torch.device(device)
        self.cfg = cfg
        self.model = model.to(self.device)
        self.stream = stream
        self.loss_fn = loss_fn
        self.optimizer = make_optimizer(self.model, cfg)
        self.scheduler = make_scheduler(self.optimizer, cfg)
        self.step = 0
        self.on_cuda = self.device.type == "cuda"
        self.forward_model: nn.Module = self.model
        if cfg.compile and self.on_cuda:
            self.forward_model = torch.compile(self.model)  # type: ignore[assignment]

    @contextlib.contextmanager
    def autocast(self) -> Iterator[None]:
        """bf16 autocast on CUDA when configured; a no-op otherwise."""
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.cfg.bf16 and self.on_cuda):
            yield

    def train_step(self) -> StepOutput:
        """One optimiser update on the stream's next batch."""
        self.model.train()
        batch = self.stream.next_batch()
        with self.autocast():
            loss, metrics = self.loss_fn(self.forward_model, batch)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm: Tensor | None = None
        if self.cfg.grad_clip is not None:
            grad_norm = nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
        lr = float(self.optimizer.param_groups[0]["lr"])
        self.optimizer.step()
        self.scheduler.step()
        self.step += 1
        return StepOutput(self.step, loss.detach(), lr, grad_norm, metrics)

    def evaluate(self, evaluate: EvalFn) -> dict[str, float]:
        """Run ``evaluate`` in eval mode without gradients, on a forked RNG so evaluation never changes the
        training run's random streams (an evaluation schedule change cannot break exact resume)."""
        devices = [self.device] if self.on_cuda else []
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.random.fork_rng(devices=devices), torch.no_grad(), self.autocast():
                return evaluate(self.forward_model, self.step)
        finally:
            self.model.train(was_training)

    def fit(
        self,
        *,
        on_log: Callable[[StepOutput], None] | None = None,
        evaluate: EvalFn | None = None,
        on_eval: Callable[[int, dict[str, float]], None] | None = None,
        save_checkpoint: Callable[[dict[str, Any], int], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> FitOutcome:
        """Train from ``self.step`` to ``cfg.steps``. After each update, in this order: ``on_log`` (every
        ``log_every`` steps), evaluation (every ``eval_interval`` steps and at the end), a checkpoint
        (every ``checkpoint_every`` steps and at the end), then ``should_stop`` (which, when true, saves a
        checkpoint unless one was just saved and returns ``stopped=True``)."""
        cfg = self.cfg
        last_eval: dict[str, float] = {}
        while self.step < cfg.steps:
            out = self.train_step()
            step, final = out.step, out.step == cfg.steps
            if on_log is not None and (step % cfg.log_every == 0 or final):
                on_log(out)
            if evaluate is not None and (final or (cfg.eval_interval > 0 and step % cfg.eval_interval == 0)):
                last_eval = self.evaluate(evaluate)
                if on_eval is not None:
                    on_eval(step, last_eval)
            saved = False
            if save_checkpoint is not None and (
                final or (cfg.checkpoint_every > 0 and step % cfg.checkpoint_every == 0)
            ):
                save_checkpoint(self.state_dict(), step)
                saved = True
            if not final and should_stop is not None and should_stop():
                if save_checkpoint is not None and not saved:
                    save_checkpoint(self.state_dict(), step)
                return FitOutcome(step, True, last_eval)
        return FitOutcome(self.step, False, last_eval)

    def state_dict(self) -> dict[str, Any]:
        """Everything to resume exactly: model, optimiser, scheduler, step, RNGs, stream position."""
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "step": self.step,
            "rng": rng_state(),
            "stream": self.stream.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.step = int(state["step"])
        set_rng_state(state["rng"])
        self.stream.load_state_dict(state["stream"])
