"""Constituent-aware pooling (CAP; paper 003, section 4.3 and appendix C.1; Aljaafari et al. 2024): the
token states of each word are pooled into one state, r_i = alpha({h_j | x_j in c_i}), alpha = max | mean |
sum.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from worker.core.carma.spans import NO_WORD

Protocol = Literal["sum", "mean", "max"]
PROTOCOLS: tuple[Protocol, ...] = ("mean", "max", "sum")


def token_groups(word_ids: Tensor, attention_mask: Tensor) -> tuple[Tensor, Tensor]:
    """CAP's groups of a right-padded batch: the tokens of one word share a group, a token of no word
    (BOS, a separator) is a group of its own; groups are numbered 0.. left to right per row.

    word_ids, attention_mask: [B, T]. Returns (group [B, T] long, -1 on padding; num_groups [B] long).
    Vectorised: a token opens a new group unless it continues the previous token's word.
    """
    real = attention_mask.bool()  # [B, T]
    prev = torch.cat([torch.full_like(word_ids[:, :1], NO_WORD), word_ids[:, :-1]], dim=1)  # [B, T]
    continues = (word_ids == prev) & (word_ids != NO_WORD)  # [B, T]
    opens = real & ~continues  # [B, T]
    group = opens.long().cumsum(dim=1) - 1  # [B, T]
    group = torch.where(real, group, torch.full_like(group, -1))
    return group, opens.long().sum(dim=1)


def pool(hidden: Tensor, group: Tensor, num_groups: Tensor, protocol: Protocol) -> tuple[Tensor, Tensor]:
    """Pool token states into group states (appendix C.1's max, mean and sum pooling).

    hidden: [B, T, d]; group: [B, T] long (-1 = padding); num_groups: [B]. Returns (pooled [B, W, d],
    right-padded with zeros to W = max groups, and its attention mask [B, W] long).
    """
    B, _, d = hidden.shape  # [B, T, d]
    W = int(num_groups.max())
    real = group >= 0  # [B, T]
    flat = (torch.arange(B, device=hidden.device)[:, None] * W + group.clamp(min=0))[real]  # [N] into B*W
    states = hidden[real]  # [N, d]
    index = flat[:, None].expand(-1, d)  # [N, d]
    if protocol == "max":
        out = hidden.new_zeros(B * W, d).scatter_reduce(0, index, states, reduce="amax", include_self=False)
    else:
        out = hidden.new_zeros(B * W, d).index_add(0, flat, states)
        if protocol == "mean":
            count = torch.bincount(flat, minlength=B * W).clamp(min=1).to(hidden.dtype)  # [B*W]
            out = out / count[:, None]
        else:
            assert protocol == "sum", f"unknown CAP protocol {protocol!r}"
    mask = (torch.arange(W, device=hidden.device)[None, :] < num_groups[:, None]).long()  # [B, W]
    return out.view(B, W, d), mask
