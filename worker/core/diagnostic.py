"""The self-test's PyTorch part: an MLP regressing a generated problem, resumable bit for bit.

Everything random comes from generators seeded by the run's seed: the problem (inputs, a fixed random
teacher network, label noise), the student's initialisation and the data order (a fresh permutation
per epoch). ``DiagnosticTrainer.state_dict`` holds all of it (parameters, optimiser moments, the data
order generator and position, the global RNG), so a trainer restored from a checkpoint takes exactly the
same steps as one that never stopped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

# The streams of one seed: distinct offsets keep the problem, the init and the data order independent.
_PROBLEM_STREAM = 0
_INIT_STREAM = 1
_ORDER_STREAM = 2


def _generator(seed: int, stream: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed * 1_000_003 + stream)


@dataclass(frozen=True)
class RegressionProblem:
    x: torch.Tensor  # (N, F) inputs
    y: torch.Tensor  # (N, 1) noisy teacher outputs


def make_problem(n_samples: int, n_features: int, noise: float, seed: int) -> RegressionProblem:
    """``y = teacher(x) + noise * eps`` with a fixed random two-layer tanh teacher (width 16)."""
    g = _generator(seed, _PROBLEM_STREAM)
    x = torch.randn(n_samples, n_features, generator=g)  # (N, F)
    w1 = torch.randn(n_features, 16, generator=g) / n_features**0.5  # (F, 16)
    w2 = torch.randn(16, 1, generator=g) / 4.0  # (16, 1)
    y = torch.tanh(x @ w1) @ w2  # (N, 1)
    y = y + noise * torch.randn(y.shape, generator=g)
    return RegressionProblem(x=x, y=y)


def build_mlp(n_features: int, hidden: int, layers: int, seed: int) -> nn.Sequential:
    """``layers`` hidden Linear+Tanh blocks of width ``hidden``, then a Linear to one output."""
    # nn.Linear initialises from the global RNG: seed it inside fork_rng so the caller's stream is untouched
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed * 1_000_003 + _INIT_STREAM)
        modules: list[nn.Module] = []
        width = n_features
        for _ in range(layers):
            modules += [nn.Linear(width, hidden), nn.Tanh()]
            width = hidden
        modules.append(nn.Linear(width, 1))
    return nn.Sequential(*modules)


class DiagnosticTrainer:
    """Adam on MSE over shuffled minibatches (one permutation per epoch, drawn from a seeded generator)."""

    def __init__(
        self,
        *,
        n_samples: int,
        n_features: int,
        noise: float,
        hidden: int,
        layers: int,
        batch_size: int,
        lr: float,
        seed: int,
        device: str = "cpu",
    ) -> None:
        assert batch_size <= n_samples, f"batch_size {batch_size} > n_samples {n_samples}"
        self.device = torch.device(device)
        problem = make_problem(n_samples, n_features, noise, seed)
        self.x = problem.x.to(self.device)
        self.y = problem.y.to(self.device)
        self.batch_size = batch_size
        self.model = build_mlp(n_features, hidden, layers, seed).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.order_generator = _generator(seed, _ORDER_STREAM)
        self.epoch = 0
        self.cursor = 0
        self.permutation = torch.randperm(n_samples, generator=self.order_generator)

    @property
    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def _next_batch(self) -> torch.Tensor:
        """Indices of the next minibatch; an epoch's tail shorter than a batch is skipped."""
        n = self.permutation.numel()
        if self.cursor + self.batch_size > n:
            self.epoch += 1
            self.cursor = 0
            self.permutation = torch.randperm(n, generator=self.order_generator)
        idx = self.permutation[self.cursor : self.cursor + self.batch_size]
        self.cursor += self.batch_size
        return idx.to(self.device)

    def train_step(self) -> float:
        """One Adam step on the next minibatch; its loss before the update."""
        idx = self._next_batch()
        pred = self.model(self.x[idx])  # (B, 1)
        loss = nn.functional.mse_loss(pred, self.y[idx])
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return float(loss.item())

    @torch.no_grad()
    def evaluate(self) -> float:
        """MSE over the whole problem."""
        return float(nn.functional.mse_loss(self.model(self.x), self.y).item())

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "order_generator": self.order_generator.get_state(),
            "permutation": self.permutation.clone(),
            "epoch": self.epoch,
            "cursor": self.cursor,
            "torch_rng": torch.get_rng_state(),
        }
        if self.device.type == "cuda":
            state["cuda_rng"] = torch.cuda.get_rng_state(self.device)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.order_generator.set_state(state["order_generator"])
        self.permutation = state["permutation"].clone()
        self.epoch = int(state["epoch"])
        self.cursor = int(state["cursor"])
        torch.set_rng_state(state["torch_rng"])
        if self.device.type == "cuda" and "cuda_rng" in state:
            torch.cuda.set_rng_state(state["cuda_rng"], self.device)
