"""Routing maths (paper 001, section 3.2.1, eq. 3; section 3.3, L_r) against independent computations."""

from __future__ import annotations

import math

import pytest
import torch

from worker.core.reasonformer.routing import (
    dense_weights,
    masked_mean,
    routing_targets,
    skill_probs,
    skill_routing_loss,
    top_k_routing,
)


def _logits(B: int = 6, n: int = 5, seed: int = 0) -> torch.Tensor:
    return torch.randn(B, n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_top_k_keeps_the_k_best_and_renormalises_them(k: int) -> None:
    logits = _logits()
    weights, selected = top_k_routing(skill_probs(logits), k)
    for b, row in enumerate(logits.tolist()):
        z = sum(math.exp(v) for v in row)
        p = [math.exp(v) / z for v in row]
        best = sorted(range(len(p)), key=p.__getitem__, reverse=True)[:k]
        kept = sum(p[j] for j in best)
        assert selected[b].tolist() == best
        assert weights[b].tolist() == pytest.approx([p[j] / kept for j in best], rel=1e-12)


@pytest.mark.parametrize("k", [1, 2, 4])
def test_router_weights_sum_to_one_and_sparsity_is_exact(k: int) -> None:
    probs = skill_probs(_logits(B=9, n=6))
    torch.testing.assert_close(probs.sum(-1), torch.ones(9, dtype=torch.float64))
    weights, selected = top_k_routing(probs, k)
    dense = dense_weights(weights, selected, 6)
    torch.testing.assert_close(dense.sum(-1), torch.ones(9, dtype=torch.float64))
    assert ((dense > 0).sum(-1) == k).all()  # exactly k skills carry weight, every other is exactly 0
    assert all(len(set(row)) == k for row in selected.tolist())


def test_masked_mean_pools_over_real_tokens_only() -> None:
    h = torch.randn(2, 4, 3, dtype=torch.float64)
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    pooled = masked_mean(h, mask)
    torch.testing.assert_close(pooled[0], (h[0, 0] + h[0, 1]) / 2)
    torch.testing.assert_close(pooled[1], h[1].mean(0))
    assert torch.isfinite(masked_mean(h, torch.zeros(2, 4))).all()


def test_routing_targets_are_uniform_over_skill_and_general() -> None:
    labels = torch.tensor([[0, 0], [3, 3], [1, -1]])  # general is 3; a composite stopping after step 1
    targets, labelled = routing_targets(labels, num_skills=4, general=3)
    assert targets[0, 0].tolist() == [0.5, 0.0, 0.0, 0.5]
    assert targets[1, 0].tolist() == [0.0, 0.0, 0.0, 1.0]  # a general instance: {general}
    assert labelled.tolist() == [[True, True], [True, True], [True, False]]
    assert targets[2, 1].tolist() == [0.0] * 4
    no_general, _ = routing_targets(labels[:1], num_skills=4, general=None)
    assert no_general[0, 0].tolist() == [1.0, 0.0, 0.0, 0.0]


def test_skill_routing_loss_equals_a_per_step_loop() -> None:
    B, S, n, general = 4, 3, 5, 4
    logits = torch.randn(B, S, n, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    labels = torch.tensor([[0, 0, 0], [2, 1, -1], [4, 4, 4], [-1, -1, -1]])
    targets, labelled = routing_targets(labels, n, general)
    loss = skill_routing_loss(logits, targets, labelled)
    per_step = []
    for s in range(S):
        terms = []
        for b in range(B):
            skill = labels[b, s].item()
            if skill < 0:
                continue
            wanted = {skill, general}
            logz = math.log(sum(math.exp(v) for v in logits[b, s].tolist()))
            terms.append(-sum((logits[b, s, j].item() - logz) / len(wanted) for j in wanted))
        if terms:
            per_step.append(sum(terms) / len(terms))
    assert loss.item() == pytest.approx(sum(per_step) / len(per_step), rel=1e-12)


def test_skill_routing_loss_is_zero_without_labels_and_differentiable() -> None:
    logits = torch.randn(2, 3, 4, requires_grad=True)
    targets, labelled = routing_targets(torch.full((2, 3), -1), 4, None)
    loss = skill_routing_loss(logits, targets, labelled)
    loss.backward()
    assert loss.item() == 0.0 and logits.grad is not None and (logits.grad == 0).all()
