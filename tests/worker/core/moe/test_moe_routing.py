"""Router maths against independent per-token computations on small tensors."""

from __future__ import annotations

import math

import pytest
import torch

from worker.core.moe import load_balancing_loss, routing_entropy, top_k_softmax
from worker.core.moe.routing import tokens_per_expert


def _logits(N: int = 7, E: int = 5, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(N, E, generator=g, dtype=torch.float64)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_top_k_softmax_matches_per_token_sort_then_softmax(k: int) -> None:
    logits = _logits()
    weights, selected = top_k_softmax(logits, k)
    for n, row in enumerate(logits.tolist()):
        best = sorted(range(len(row)), key=row.__getitem__, reverse=True)[:k]
        z = sum(math.exp(row[e]) for e in best)
        assert selected[n].tolist() == best
        assert weights[n].tolist() == pytest.approx([math.exp(row[e]) / z for e in best], rel=1e-12)


def test_top_k_softmax_equals_mixtral_renormalised_full_softmax() -> None:
    logits = _logits(N=9, E=6)
    weights, selected = top_k_softmax(logits, 3)
    probs = torch.softmax(logits, dim=-1).gather(1, selected)
    torch.testing.assert_close(weights, probs / probs.sum(dim=-1, keepdim=True))


def test_load_balancing_loss_matches_independent_loops() -> None:
    N, E, k, coef = 7, 5, 2, 0.3
    logits = _logits(N, E)
    _, selected = top_k_softmax(logits, k)
    f = [0.0] * E
    for e in selected.flatten().tolist():
        f[e] += 1.0 / (N * k)
    P = [0.0] * E
    for row in logits.tolist():
        z = sum(math.exp(v) for v in row)
        for e, v in enumerate(row):
            P[e] += math.exp(v) / z / N
    expected = coef * E * sum(fe * pe for fe, pe in zip(f, P))
    assert load_balancing_loss(logits, selected, coef).item() == pytest.approx(expected, rel=1e-12)


def test_load_balancing_loss_is_coef_at_uniform_routing_and_differentiable_through_probs() -> None:
    E = 4
    logits = torch.zeros(8, E, dtype=torch.float64, requires_grad=True)
    selected = torch.arange(8).remainder(E)[:, None]  # every expert gets 2 of the 8 top-1 assignments
    loss = load_balancing_loss(logits, selected, coef=0.5)
    assert loss.item() == pytest.approx(0.5)
    # With skewed assignments (all to expert 0) the gradient pushes probability away from expert 0.
    skewed = load_balancing_loss(logits, torch.zeros(8, 1, dtype=torch.long), coef=0.5)
    (grad,) = torch.autograd.grad(skewed, logits)
    assert (grad[:, 0] > 0).all() and (grad[:, 1:] < 0).all()


def test_routing_entropy_matches_formula() -> None:
    logits = _logits()
    expected = 0.0
    for row in logits.tolist():
        z = sum(math.exp(v) for v in row)
        expected -= sum(math.exp(v) / z * math.log(math.exp(v) / z) for v in row) / len(logits)
    assert routing_entropy(logits).item() == pytest.approx(expected, rel=1e-12)
    assert routing_entropy(torch.zeros(3, 8)).item() == pytest.approx(math.log(8), rel=1e-6)


def test_tokens_per_expert_counts_every_slot() -> None:
    selected = torch.tensor([[0, 3], [3, 1], [0, 1]])
    assert tokens_per_expert(selected, 5).tolist() == [2, 2, 0, 2, 0]
