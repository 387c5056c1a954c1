"""A reasoning module (paper 001, section 3.2): a few backbone blocks that learn one skill in pre-training,
with, in the shared variant, one pair of reasoning adapters per block for every reasoning step
(section 3.2.2: "the reasoning adapters for different skills and different reasoning depths are
non-shared"). A private module (section 3.2.3) belongs to one step and has no adapters.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor, nn

from worker.core.reasonformer.adapter import AdapterPair
from worker.core.reasonformer.blocks import BlockContext


class ReasoningModule(nn.Module):
    """``blocks`` (received, e.g. copies of T5 encoder blocks) run in order; ``adapters[step][layer]`` when
    the module is shared across steps with adapters, else None."""

    def __init__(self, blocks: Sequence[nn.Module], adapters: Sequence[Sequence[AdapterPair]] | None = None):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.adapters: nn.ModuleList | None = None
        if adapters is not None:
            assert all(len(a) == len(blocks) for a in adapters), (
                f"one adapter pair per block: {[len(a) for a in adapters]} for {len(blocks)} blocks"
            )
            self.adapters = nn.ModuleList([nn.ModuleList(step) for step in adapters])

    def forward(self, h: Tensor, ctx: BlockContext, step: int) -> Tensor:
        """R_j(H): h [B, T, d] -> [B, T, d], with step ``step``'s adapters."""
        for layer, block in enumerate(self.blocks):
            adapters = self.adapters[step][layer] if self.adapters is not None else None  # type: ignore[index]
            h = ctx.run(block, h, adapters)
        return h
