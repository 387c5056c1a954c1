"""The self-test's trainer: seeded, and restored from its state_dict it takes the same steps bit for bit."""

from __future__ import annotations

import io

import torch

from worker.core.diagnostic import DiagnosticTrainer, make_problem

CONFIG = dict(n_samples=64, n_features=4, noise=0.05, hidden=8, layers=2, batch_size=24, lr=1e-2, seed=3)


def test_same_seed_same_problem_and_init() -> None:
    a, b = DiagnosticTrainer(**CONFIG), DiagnosticTrainer(**CONFIG)  # type: ignore[arg-type]
    assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y)
    assert all(torch.equal(p, q) for p, q in zip(a.model.parameters(), b.model.parameters()))
    assert not torch.equal(make_problem(64, 4, 0.05, seed=4).x, a.x.cpu())


def test_restored_trainer_continues_bit_for_bit() -> None:
    reference = DiagnosticTrainer(**CONFIG)  # type: ignore[arg-type]
    losses = [
        reference.train_step() for _ in range(20)
    ]  # 20 steps cross several epochs (64 // 24 = 2 per epoch)

    first = DiagnosticTrainer(**CONFIG)  # type: ignore[arg-type]
    head = [first.train_step() for _ in range(7)]
    buffer = io.BytesIO()
    torch.save(first.state_dict(), buffer)  # through serialisation, as a checkpoint would be
    buffer.seek(0)
    second = DiagnosticTrainer(**CONFIG)  # type: ignore[arg-type]
    second.load_state_dict(torch.load(buffer, weights_only=False))
    tail = [second.train_step() for _ in range(13)]

    assert head + tail == losses
    assert second.evaluate() == reference.evaluate()


def test_training_reduces_the_loss() -> None:
    trainer = DiagnosticTrainer(**CONFIG)  # type: ignore[arg-type]
    before = trainer.evaluate()
    for _ in range(100):
        trainer.train_step()
    assert trainer.evaluate() < before / 2
