"""CARMA's losses as pure functions of hidden states (paper 003, section 3.2, eqs. 5-8; appendix D, eqs.
15-16). Batched and vectorised: no Python loop over pairs, anchors or layers.

Shapes: ``hidden`` is ``[Lr, B, T, d]``, the residual stream after each block of the chosen range
(``residual.py``); ``word_ids [B, T]`` long (-1: no word, see ``spans.py``); ``attention_mask [B, T]``
(1 real, 0 padding).

Choices where the paper and the reference code differ (REFERENCE.md, "Open points";
docs/experiments/carma.md):
- one InfoNCE term per positive pair (i < j) of tokens of one word, as the code (eq. 5/16 are
  multi-positive per anchor); the mean is over all pairs of the batch per layer, then over layers;
- negatives: ``num_negatives`` positions per pair, drawn with replacement from the same sequence, outside
  the anchor's word, never padding; drawn once per step and shared by the layers of the range;
- every word of 2+ tokens counts (the code skips each sequence's last word); a batch without such a
  word, or whose pairs have no possible negative, gives a zero loss;
- stability: eq. 6's pairs (k, k+1) for k = l..K, padding masked.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from worker.core.moe.routing import at_least_fp32  # bf16/fp16 states are compared in float32


@dataclass
class PositivePairs:
    """Positive pairs (anchor i < positive j, same word, same sequence) and their negatives."""

    batch: Tensor  # [P] long: sequence of the pair
    anchor: Tensor  # [P] long: position i
    positive: Tensor  # [P] long: position j
    negatives: Tensor  # [P, N] long: positions outside the word, never padding

    def __len__(self) -> int:
        return int(self.batch.shape[0])


def positive_pairs(word_ids: Tensor, attention_mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Every pair (i < j) of token positions inside one word of 2+ tokens, per sequence.

    word_ids, attention_mask: [B, T]. Returns (batch [P], anchor i [P], positive j [P]), long.
    """
    T = word_ids.shape[1]  # word_ids: [B, T]
    real = (word_ids >= 0) & attention_mask.bool()  # [B, T]
    same = (word_ids[:, :, None] == word_ids[:, None, :]) & real[:, :, None] & real[:, None, :]  # [B, T, T]
    upper = torch.ones(T, T, dtype=torch.bool, device=word_ids.device).triu(diagonal=1)  # i < j
    b, i, j = (same & upper).nonzero(as_tuple=True)
    return b, i, j


def sample_negatives(
    word_ids: Tensor,
    attention_mask: Tensor,
    batch: Tensor,
    anchor: Tensor,
    positive: Tensor,
    num_negatives: int,
    generator: torch.Generator | None = None,
) -> PositivePairs:
    """Draw ``num_negatives`` negatives per pair, uniformly with replacement among the positions of the
    pair's sequence that are real (not padding) and outside the anchor's word. Pairs with no such position
    (a sequence that is one word) are dropped: their InfoNCE term would have no negative.

    Returns the kept pairs with ``negatives [P, num_negatives]``.
    """
    assert num_negatives >= 1, f"num_negatives must be >= 1, got {num_negatives}"
    allowed = attention_mask.bool()[batch] & (word_ids[batch] != word_ids[batch, anchor][:, None])  # [P, T]
    keep = allowed.any(dim=1)  # [P]
    if not bool(keep.all()):
        batch, anchor, positive, allowed = batch[keep], anchor[keep], positive[keep], allowed[keep]
    if batch.numel() == 0:
        empty = batch.new_zeros((0, num_negatives))
        return PositivePairs(batch, anchor, positive, empty)
    negatives = torch.multinomial(allowed.float(), num_negatives, replacement=True, generator=generator)
    return PositivePairs(batch, anchor, positive, negatives)  # negatives: [P, N]


def mi_loss(hidden: Tensor, pairs: PositivePairs, temperature: float = 0.1) -> Tensor:
    """CARMA's mutual-information loss, InfoNCE (paper 003, section 3.2, eq. 5; appendix D, eqs. 15-16;
    Oord et al. 2018), one term per positive pair, cosine similarity over temperature:

        l_p^k = log( e^{s(h_i^k, h_j^k)/tau} / (e^{s(h_i^k, h_j^k)/tau} + sum_{m in N_p} e^{s(h_i^k, h_m^k)/tau}) )
        L_MI  = - mean_k mean_p l_p^k

    hidden: [Lr, B, T, d]; pairs: P pairs with N negatives each. Returns a scalar (0 when P = 0, keeping
    the graph so a backward through it is a no-op rather than an error).
    """
    Lr = hidden.shape[0]
    if len(pairs) == 0:
        return hidden.sum() * 0.0
    h = F.normalize(at_least_fp32(hidden), dim=-1)  # [Lr, B, T, d], unit vectors: dot = cosine
    anchors = h[:, pairs.batch, pairs.anchor]  # [Lr, P, d]
    keys_idx = torch.cat([pairs.positive[:, None], pairs.negatives], dim=1)  # [P, 1+N]: positive first
    keys = h[:, pairs.batch[:, None], keys_idx]  # [Lr, P, 1+N, d]
    logits = torch.einsum("lpd,lpkd->lpk", anchors, keys) / temperature  # [Lr, P, 1+N]
    log_p_positive = logits[..., 0] - torch.logsumexp(logits, dim=-1)  # [Lr, P]
    assert log_p_positive.shape == (Lr, len(pairs)), f"{tuple(log_p_positive.shape)}"
    return -log_p_positive.mean(dim=1).mean()


def stability_loss(hidden: Tensor, attention_mask: Tensor, eps: float = 1e-8) -> Tensor:
    """Layer-wise stability loss (paper 003, section 3.2, eq. 6), summed over consecutive layers:

        L_stab = sum_k E[|h^{k+1} - h^k|^2] / (E[|h^k|^2] + E[|h^{k+1}|^2] + eps)

    each E a mean over the real (non-pad) positions and the d features, as the reference's ``mean``.
    hidden: [Lk, B, T, d], the blocks k = l..K+1 (Lk - 1 pairs); attention_mask: [B, T]. Returns a scalar.
    """
    Lk = hidden.shape[0]
    if Lk < 2:
        return hidden.sum() * 0.0
    h = at_least_fp32(hidden)
    m = attention_mask.to(h.dtype)[None, :, :, None]  # [1, B, T, 1]
    count = m.sum() * h.shape[-1]  # real positions x features
    energy = (h.pow(2) * m).sum(dim=(1, 2, 3)) / count  # [Lk]: E[|h^k|^2]
    diff = ((h[1:] - h[:-1]).pow(2) * m).sum(dim=(1, 2, 3)) / count  # [Lk-1]
    return (diff / (energy[:-1] + energy[1:] + eps)).sum()


def carma_loss(mi: Tensor, stability: Tensor, gamma: float, eta: float) -> Tensor:
    """L_CARMA = gamma * L_MI + eta * L_stability (paper 003, section 3.2, eq. 7)."""
    return gamma * mi + eta * stability


def total_loss(task: Tensor, carma: Tensor, lam: float) -> Tensor:
    """L_total = (1 - lambda) * L_task + lambda * L_CARMA (paper 003, section 3.2, eq. 8); lambda = 0 is
    plain fine-tuning. A lambda outside [0, 1] (eq. 8's range) is a ValueError naming it, under ``python -O``
    too."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lambda must be in [0, 1] (paper 003, eq. 8), got {lam!r}")
    return (1.0 - lam) * task + lam * carma if lam > 0 else task
