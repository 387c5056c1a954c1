"""The representation module (paper 001, section 3.1, eq. 1): the first R backbone blocks, "System 1", that
compute H^0 for the reasoning modules. For T5 it initialises from encoder blocks 1..9 (section 4.3.2).

For T5, block 0 owns the relative position bias; ``position_bias`` computes it once per pass and every
later block, here and in the reasoning modules and router, receives it (``blocks.T5Context``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import Tensor, nn

from worker.core.reasonformer.blocks import BlockContext


class RepresentationModule(nn.Module):
    def __init__(self, blocks: Sequence[nn.Module]) -> None:
        super().__init__()
        assert len(blocks) >= 1, "the representation module needs at least one block"
        self.blocks = nn.ModuleList(blocks)

    def t5_position_bias(self, T: int) -> Tensor:
        """[1, H, T, T]: block 0's bidirectional relative position bias (Raffel et al. 2020, section 2.1)."""
        block: Any = self.blocks[0]
        attention = block.layer[0].SelfAttention
        assert attention.has_relative_attention_bias, "block 0 of a T5 encoder must own the position bias"
        return attention.compute_bias(T, T, device=attention.relative_attention_bias.weight.device)

    def forward(self, h: Tensor, ctx: BlockContext) -> Tensor:
        """Eq. 1: H^0 = blocks(embedded input). h: [B, T, d] -> [B, T, d]."""
        for block in self.blocks:
            h = ctx.run(block, h)
        return h
