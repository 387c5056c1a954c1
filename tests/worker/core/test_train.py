"""The shared trainer: schedule, weight-decay groups, clipping, evaluation isolation, exact resume."""

from __future__ import annotations

import io
import math
from typing import Any

import pytest
import torch
from torch import Tensor, nn

from worker.core.train import (
    StepOutput,
    TrainConfig,
    Trainer,
    lr_multiplier,
    param_groups,
)

pytestmark = pytest.mark.usefixtures("one_thread")


class RegressionStream:
    """A seeded endless stream of (x, y) batches with its own generator state."""

    def __init__(self, seed: int, batch_size: int = 16) -> None:
        self.g = torch.Generator().manual_seed(seed)
        self.batch_size = batch_size
        self.w = torch.randn(6, 1, generator=torch.Generator().manual_seed(1234))

    def next_batch(self) -> tuple[Tensor, Tensor]:
        x = torch.randn(self.batch_size, 6, generator=self.g)
        return x, x @ self.w + 0.1 * torch.randn(self.batch_size, 1, generator=self.g)

    def state_dict(self) -> dict[str, Any]:
        return {"g": self.g.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.g.set_state(state["g"])


def make_model(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    # dropout draws from the global torch RNG, so exact resume needs the RNG state too
    return nn.Sequential(nn.Linear(6, 32), nn.GELU(), nn.Dropout(0.2), nn.LayerNorm(32), nn.Linear(32, 1))


def mse(model: nn.Module, batch: tuple[Tensor, Tensor]) -> tuple[Tensor, dict[str, float | Tensor]]:
    x, y = batch
    loss = ((model(x) - y) ** 2).mean()
    return loss, {"half_loss": loss.detach() / 2}


def config(**overrides: Any) -> TrainConfig:
    base: dict[str, Any] = {"steps": 30, "lr": 1e-2, "warmup_steps": 5, "weight_decay": 0.1, "grad_clip": 1.0}
    return TrainConfig(**{**base, **overrides})


def test_lr_schedule_warms_up_linearly_then_cosines_to_a_tenth() -> None:
    cfg = TrainConfig(steps=110, warmup_steps=10)
    assert [lr_multiplier(s, cfg) for s in range(3)] == pytest.approx([0.1, 0.2, 0.3])
    assert lr_multiplier(9, cfg) == pytest.approx(1.0)
    assert lr_multiplier(10, cfg) == pytest.approx(1.0)
    assert lr_multiplier(60, cfg) == pytest.approx(0.1 + 0.9 * 0.5)  # half way: cos(pi/2) = 0
    assert lr_multiplier(110, cfg) == pytest.approx(0.1)
    assert lr_multiplier(500, cfg) == pytest.approx(0.1)
    assert lr_multiplier(0, TrainConfig(steps=10, warmup_steps=0)) == pytest.approx(1.0)


def test_the_optimiser_sees_the_schedule() -> None:
    cfg = config(steps=12, warmup_steps=4, lr=0.5)
    trainer = Trainer(make_model(0), RegressionStream(0), mse, cfg)
    lrs = [trainer.train_step().lr for _ in range(12)]
    assert lrs == pytest.approx([0.5 * lr_multiplier(s, cfg) for s in range(12)])


def test_weight_decay_only_on_matrices() -> None:
    model = make_model(0)
    decay, no_decay = param_groups(model, 0.1)
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert all(p.ndim >= 2 for p in decay["params"]) and len(decay["params"]) == 2
    assert all(p.ndim == 1 for p in no_decay["params"]) and len(no_decay["params"]) == 4


def test_grad_clipping_reports_the_norm() -> None:
    out = Trainer(make_model(0), RegressionStream(0), mse, config(grad_clip=1e-3)).train_step()
    scalars = out.scalars()
    assert scalars["grad_norm"] > 1e-3
    assert scalars["half_loss"] == pytest.approx(scalars["loss"] / 2)
    assert (
        "grad_norm"
        not in Trainer(make_model(0), RegressionStream(0), mse, config(grad_clip=None)).train_step().scalars()
    )


def run_losses(trainer: Trainer, **kwargs: Any) -> list[float]:
    losses: list[float] = []

    def on_log(out: StepOutput) -> None:
        losses.append(float(out.loss))

    trainer.fit(on_log=on_log, **kwargs)
    return losses


def roundtrip(state: dict[str, Any]) -> dict[str, Any]:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return torch.load(io.BytesIO(buffer.getvalue()), weights_only=True)


def test_resume_after_a_checkpoint_reproduces_the_uninterrupted_run_exactly() -> None:
    cfg = config(steps=30, checkpoint_every=7)
    full = Trainer(make_model(0), RegressionStream(0), mse, cfg)
    full_losses = run_losses(full)

    checkpoints: list[tuple[dict[str, Any], int]] = []
    first = Trainer(make_model(0), RegressionStream(0), mse, cfg)
    stop_at = 12
    outcome_losses: list[float] = []

    def on_log(out: StepOutput) -> None:
        outcome_losses.append(float(out.loss))

    outcome = first.fit(
        on_log=on_log,
        save_checkpoint=lambda state, step: checkpoints.append((roundtrip(state), step)),
        should_stop=lambda: first.step >= stop_at,
    )
    assert outcome.stopped and outcome.step == stop_at
    assert [step for _, step in checkpoints] == [7, 12]  # periodic, then the one taken on stopping
    # a new process: fresh model (other init), fresh stream (other seed), scrambled global RNG
    torch.manual_seed(999)
    resumed = Trainer(make_model(123), RegressionStream(77), mse, cfg)
    resumed.load_state_dict(checkpoints[-1][0])
    rest = run_losses(resumed)
    assert outcome_losses + rest == full_losses  # bitwise
    for a, b in zip(full.model.state_dict().values(), resumed.model.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    assert resumed.step == 30


def test_evaluation_never_changes_the_training_run() -> None:
    cfg = config(steps=15, eval_interval=2)
    evals: list[int] = []

    def evaluate(model: nn.Module, step: int) -> dict[str, float]:
        assert not model.training and not torch.is_grad_enabled()
        torch.rand(100)  # consumes the global RNG: must not leak into training
        evals.append(step)
        return {"acc": 1.0}

    with_eval = run_losses(Trainer(make_model(0), RegressionStream(0), mse, cfg), evaluate=evaluate)
    without = run_losses(Trainer(make_model(0), RegressionStream(0), mse, cfg))
    assert with_eval == without
    assert evals == [2, 4, 6, 8, 10, 12, 14, 15]


def test_training_reduces_the_loss() -> None:
    losses = run_losses(
        Trainer(make_model(0), RegressionStream(0), mse, config(steps=200, lr=3e-2, grad_clip=None))
    )
    assert sum(losses[-20:]) / 20 < 0.5 * sum(losses[:5]) / 5
    assert all(math.isfinite(x) for x in losses)


def test_weight_decay_follows_the_role_not_the_shape() -> None:
    """Stacked expert biases ``[E, h]`` / ``[E, d]`` are 2-D but biases: not decayed (the reference's
    per-expert Dense layers have 1-D biases, which its mask excludes). Norm scales and biases neither;
    kernels, expert weights, the router and embeddings are decayed."""
    from worker.core.moe import MoEConfig
    from worker.core.sraven.model import SravenTransformer, SravenTransformerConfig

    model = SravenTransformer(
        SravenTransformerConfig(
            d_model=16,
            num_layers=1,
            num_heads=2,
            qk_dim=8,
            v_dim=8,
            moe=MoEConfig(d_model=16, num_experts=4, top_k=2, expert_hidden=8),
        )
    )
    decay, no_decay = param_groups(model, 0.1)
    ids = lambda group: {id(p) for p in group["params"]}  # noqa: E731
    names = {id(p): n for n, p in model.named_parameters()}
    decayed = {names[i] for i in ids(decay)}
    kept = {names[i] for i in ids(no_decay)}
    assert decayed | kept == set(names.values()) and not decayed & kept
    assert {n for n in kept if n.endswith((".b1", ".b2"))}, "expert biases are in the no-decay group"
    assert not {n for n in decayed if n.endswith((".b1", ".b2", "bias")) or ".ln" in n}
    assert {n for n in decayed if n.endswith((".w1", ".w2"))} and any("router" in n for n in decayed)
