"""The small pooled-state FFNs of the reasoning router and the stop gate (paper 001, section 3.2.1).

The paper says "an FFN layer" for both. T5's FFN sublayers are pre-norm, and the residual stream of a T5
encoder is not normalised between blocks (its scale grows with depth), so the head normalises the pooled
state first (T5's RMS norm), then Linear -> ReLU -> Linear.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from worker.core.reasonformer.linear import FanInLinear


class RMSNorm(nn.Module):
    """T5's layer norm: scale only, no mean subtraction, no bias (Raffel et al. 2020, section 2.1)."""

    def __init__(self, d: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        var = x.float().pow(2).mean(dim=-1, keepdim=True)
        return (x.float() * torch.rsqrt(var + self.eps)).to(x.dtype) * self.weight


class PooledFFN(nn.Module):
    """RMSNorm -> Linear(d, hidden) -> ReLU -> Linear(hidden, out) on a pooled state [B, d] -> [B, out]."""

    def __init__(self, d_model: int, hidden: int, out: int) -> None:
        super().__init__()
        self.norm = RMSNorm(d_model)
        self.up = FanInLinear(d_model, hidden)
        self.down = FanInLinear(hidden, out)

    def forward(self, pooled: Tensor) -> Tensor:
        return self.down(torch.relu(self.up(self.norm(pooled))))
