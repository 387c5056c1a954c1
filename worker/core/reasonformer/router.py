"""The skill router (paper 001, section 3.2.1, eq. 3): which reasoning skills step i activates.

    H^_{i-1} = T(H_{i-1})                       one Transformer layer (shared by all steps, DESIGN.md)
    S^i      = Softmax(FFN_i(pool(H^_{i-1})))   a pooling head per step; pool = mean over non-pad tokens

Routing is per instance, not per token ("token-level information is limited in representing the complete
semantics of problems"). The router returns logits; ``routing.py`` turns them into weights.
"""

from __future__ import annotations

from torch import Tensor, nn

from worker.core.reasonformer.blocks import BlockContext
from worker.core.reasonformer.heads import PooledFFN
from worker.core.reasonformer.routing import masked_mean


class SkillRouter(nn.Module):
    """A backbone block T (receives it: a T5 block, or a decoder layer) and ``depth`` pooled FFN heads."""

    def __init__(self, block: nn.Module, d_model: int, hidden: int, num_skills: int, depth: int) -> None:
        super().__init__()
        self.block = block
        self.heads = nn.ModuleList([PooledFFN(d_model, hidden, num_skills) for _ in range(depth)])

    def forward(self, h: Tensor, ctx: BlockContext, pool_mask: Tensor, step: int) -> Tensor:
        """h: [B, T, d] (H_{i-1}); pool_mask: [B, T]. Returns router_logits [B, n] of step ``step`` (eq. 3)."""
        h_hat = ctx.run(self.block, h)  # [B, T, d]
        return self.heads[step](masked_mean(h_hat, pool_mask))  # [B, d] -> [B, n]
