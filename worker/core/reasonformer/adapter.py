"""The reasoning adapter (paper 001, section 3.2.2): step-specific bottleneck adapters that adapt a shared
reasoning module to each reasoning step, as Houlsby et al. (2019) place them.

Houlsby et al. 2019, section 2.1 and Figure 2: an adapter is inserted twice per Transformer layer, after
the attention sublayer's output projection and after the feed-forward sublayer, before each is added to
the residual stream; it is a bottleneck with its own skip connection,

    A(z) = z + W_up f(W_down z + b_down) + b_up,

with the up-projection initialised to zero here (DESIGN.md) so a fresh adapter is exactly the identity and
the reasoning module starts as the T5 blocks it was copied from.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from worker.core.reasonformer.linear import FanInLinear, ZeroLinear


class Adapter(nn.Module):
    """Houlsby bottleneck adapter ``z + up(gelu(down(z)))``; ``up`` starts at zero (identity at init)."""

    def __init__(self, d_model: int, bottleneck: int) -> None:
        super().__init__()
        self.down = FanInLinear(d_model, bottleneck)
        # Houlsby et al. initialise near the identity; a zero up-projection makes it exact (DESIGN.md)
        self.up = ZeroLinear(bottleneck, d_model)

    def forward(self, z: Tensor) -> Tensor:
        """z: [B, T, d] -> [B, T, d] (Houlsby et al. 2019, section 2.1)."""
        return z + self.up(F.gelu(self.down(z)))


class AdapterPair(nn.Module):
    """The two adapters of one Transformer block: after attention and after the FFN sublayer."""

    def __init__(self, d_model: int, bottleneck: int) -> None:
        super().__init__()
        self.attention = Adapter(d_model, bottleneck)
        self.ffn = Adapter(d_model, bottleneck)
