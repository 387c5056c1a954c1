"""The stop gate (paper 001, section 3.2.1, eq. 4): after each reasoning step, how much of the step's update
to keep, so later steps are "softly stopped" once reasoning is sufficient.

Eq. 4 writes H~_i = H_{i-1} + G_stop(H_i), a residual gate. DESIGN.md fixes the form: one scalar per
instance, g_i = sigmoid(FFN(pool(H_i))), and H~_i = H_{i-1} + g_i * (H_i - H_{i-1}).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from worker.core.reasonformer.heads import PooledFFN
from worker.core.reasonformer.routing import masked_mean


class StopGate(nn.Module):
    """g = sigmoid(FFN(pool(H_i))): [B, T, d] -> [B] in (0, 1)."""

    def __init__(self, d_model: int, hidden: int) -> None:
        super().__init__()
        self.ffn = PooledFFN(d_model, hidden, 1)

    def forward(self, h: Tensor, pool_mask: Tensor) -> Tensor:
        return torch.sigmoid(self.ffn(masked_mean(h, pool_mask)).squeeze(-1))  # [B]


def gated_residual(h_prev: Tensor, h_step: Tensor, gate: Tensor) -> Tensor:
    """Eq. 4 in DESIGN.md's form: H~_i = H_{i-1} + g_i * (H_i - H_{i-1}).

    h_prev, h_step: [B, T, d]; gate: [B]. Returns [B, T, d].
    """
    return h_prev + gate.to(h_step.dtype)[:, None, None] * (h_step - h_prev)
