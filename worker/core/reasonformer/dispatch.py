"""Combining the activated reasoning modules of one step (paper 001, section 3.2.1, eq. 2):

    H^i = sum_{j in top-k} S^i_j R_j(H^{i-1})

Two implementations of the same function:
- ``sparse_dispatch``: groups the batch by skill and runs each module only on the instances that chose it,
  so a step costs about k/n of full activation (routing is per instance: a module sees whole sequences).
- ``masked_dispatch``: every module on every instance, weighted by a [B, n] matrix that is zero outside the
  top-k. The reference the sparse one is tested against (outputs and gradients), and the cost of "n/n with
  masks".
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from worker.core.reasonformer.blocks import BlockContext
from worker.core.reasonformer.reasoning import ReasoningModule


def sparse_dispatch(
    h: Tensor,
    modules: Sequence[ReasoningModule],
    routing_weights: Tensor,
    selected_skills: Tensor,
    ctx: BlockContext,
    step: int,
) -> Tensor:
    """Eq. 2 by instance groups. h [B, T, d]; routing_weights, selected_skills [B, k]. Returns [B, T, d]."""
    B = h.shape[0]
    out = torch.zeros_like(h)
    for j, module in enumerate(modules):
        hit = selected_skills == j  # [B, k]: at most one slot per row
        weight = (routing_weights * hit).sum(dim=-1)  # [B], 0 where j was not selected
        rows = hit.any(dim=-1).nonzero(as_tuple=True)[0]  # [B_j]
        if rows.numel() == 0:
            continue
        if rows.numel() == B:  # every instance chose j (always so under full activation): no gather
            out = out + weight.to(h.dtype)[:, None, None] * module(h, ctx, step)
            continue
        y = module(h.index_select(0, rows), ctx.rows(rows), step)  # [B_j, T, d]
        out = out.index_add(0, rows, weight.index_select(0, rows).to(y.dtype)[:, None, None] * y)
    return out


def masked_dispatch(
    h: Tensor, modules: Sequence[ReasoningModule], weights: Tensor, ctx: BlockContext, step: int
) -> Tensor:
    """Eq. 2 with every module on every instance. weights: [B, n], zero outside the top-k (``dense_weights``).
    Returns [B, T, d]."""
    out = torch.zeros_like(h)
    for j, module in enumerate(modules):
        out = out + weights[:, j].to(h.dtype)[:, None, None] * module(h, ctx, step)
    return out
