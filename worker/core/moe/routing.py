"""Router maths: top-k softmax gating, the Switch load-balancing loss, routing entropy.

Pure functions of the router logits; the router itself (a bias-free linear layer) lives in `layer.py`.
"""

from __future__ import annotations

import torch
from torch import Tensor


def at_least_fp32(t: Tensor) -> Tensor:
    """Half-precision router maths is done in float32 (as Mixtral does); float32/float64 stay as they are."""
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


def top_k_softmax(router_logits: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """Keep each token's k largest router logits and softmax over those k only.

    SMoE paper (004), appendix A.2.1, Listing 1 lines 28-31:
    `expert_weights, expert_indices = top_k(scores, k); expert_weights = softmax(expert_weights)`.
    Equal to Mixtral's "softmax over all E, keep top-k, renormalise".

    router_logits: [N, E]. Returns (routing_weights [N, k], selected_experts [N, k] long), slots ordered by
    decreasing logit.
    """
    E = router_logits.shape[-1]
    assert 1 <= k <= E, f"top_k must be in 1..{E}, got {k}"
    top_logits, selected_experts = torch.topk(router_logits, k, dim=-1)  # [N, k], [N, k]
    routing_weights = torch.softmax(top_logits, dim=-1)  # [N, k]
    return routing_weights, selected_experts


def tokens_per_expert(selected_experts: Tensor, num_experts: int) -> Tensor:
    """Number of (token, slot) assignments routed to each expert: [E] long, sums to N * k."""
    return torch.bincount(selected_experts.reshape(-1), minlength=num_experts)


def load_balancing_loss(router_logits: Tensor, selected_experts: Tensor, coef: float = 1.0) -> Tensor:
    """Switch Transformer auxiliary load-balancing loss (Fedus et al. 2021, section 2.2, eq. 4), for top-k.

        loss = coef * E * sum_e f_e * P_e
        f_e  = (number of the N*k top-k assignments that chose expert e) / (N * k)    (eq. 5, over k slots)
        P_e  = (1 / N) * sum_n softmax(router_logits[n])_e                          (eq. 6, full softmax)

    Switch routes top-1, where f_e is the fraction of tokens; with top-k we count every slot, so sum_e f_e = 1
    and the loss is coef at a perfectly uniform routing, as in Switch. f is a count (no gradient); the
    gradient reaches the router through P. Mixtral's `load_balancing_loss_func` scales the same quantity
    differently (its f sums to k), so its value is k times ours.

    router_logits: [N, E]; selected_experts: [N, k] long. Returns a float scalar.
    """
    E = router_logits.shape[-1]
    probs = torch.softmax(at_least_fp32(router_logits), dim=-1)  # [N, E]
    P = probs.mean(dim=0)  # [E]
    f = tokens_per_expert(selected_experts, E).to(P.dtype) / selected_experts.numel()  # [E]
    return coef * E * torch.sum(f * P)


def routing_entropy(router_logits: Tensor) -> Tensor:
    """Mean over tokens of the entropy (nats) of the full softmax router distribution; detached diagnostic.

    router_logits: [N, E]. Returns a float scalar in [0, log E].
    """
    logp = torch.log_softmax(at_least_fp32(router_logits.detach()), dim=-1)  # [N, E]
    return -(logp.exp() * logp).sum(dim=-1).mean()
