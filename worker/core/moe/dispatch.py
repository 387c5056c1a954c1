"""Combining routed experts: y[n] = sum_j routing_weights[n, j] * expert_{selected_experts[n, j]}(x[n]).

Three implementations of the same function (SMoE paper 004, appendix A.2.1, Listing 1 lines 33-53):
`dense_masked_moe` runs Listing 1 literally (reference); `grouped_moe` (here) and `sorted_moe`
(sorted_dispatch.py) run each expert once on the rows routed to it, so the cost grows with k and not with E.
"""

from __future__ import annotations

import torch
from torch import Tensor

from worker.core.moe.experts import Experts
from worker.core.moe.sorted_dispatch import sort_by_expert


def dense_masked_moe(
    x: Tensor, experts: Experts, selected_experts: Tensor, routing_weights: Tensor
) -> Tensor:
    """Listing 1 of the SMoE paper (appendix A.2.1, lines 33-53), every expert on every routed row, masked.

    x [N, d]; selected_experts [N, k] long; routing_weights [N, k]. Returns y [N, d].
    Costs E times the routed work: the reference the sparse dispatches are tested against.
    """
    N, d = x.shape
    k = selected_experts.shape[1]
    x_expanded = x[:, None, :].expand(N, k, d)  # [N, k, d] (Listing 1 line 33: repeat over the k slots)
    outputs = torch.zeros_like(x_expanded)  # [N, k, d]
    for e in range(experts.num_experts):
        mask = (selected_experts == e)[:, :, None]  # [N, k, 1]
        expert_input = torch.where(mask, x_expanded, 0.0)  # [N, k, d], rows not routed to e zeroed
        expert_output = experts.forward_one(expert_input.reshape(N * k, d), e).view(N, k, d)
        outputs = torch.where(mask, expert_output, outputs)  # keep e's output only where e was chosen
    return torch.sum(outputs * routing_weights[..., None].to(outputs.dtype), dim=1)  # [N, d]


def _combine(ys: Tensor, order: Tensor, routing_weights: Tensor, N: int) -> Tensor:
    """Scale each sorted row by its routing weight and add it back to its token.

    ys [S, d] in expert order; order [S]; routing_weights [N, k]. Returns [N, d].
    """
    k = routing_weights.shape[1]
    token_idx = order // k  # [S]
    w_sorted = routing_weights.reshape(-1).index_select(0, order).to(ys.dtype)  # [S]
    return ys.new_zeros(N, ys.shape[1]).index_add(0, token_idx, ys * w_sorted[:, None])


def grouped_moe(x: Tensor, experts: Experts, selected_experts: Tensor, routing_weights: Tensor) -> Tensor:
    """As `sorted_moe`, with one torch grouped GEMM per projection instead of a loop over experts.

    x [N, d]; selected_experts [N, k] long; routing_weights [N, k]. Returns y [N, d]. Autograd does the
    backward (grouped_mm has its own derivative).
    """
    N = x.shape[0]
    k = selected_experts.shape[1]
    order, counts = sort_by_expert(selected_experts, experts.num_experts)
    xs = x.index_select(0, order // k)  # [S, d]
    ys = experts.forward_grouped(xs, counts)  # [S, d]
    return _combine(ys, order, routing_weights, N)
