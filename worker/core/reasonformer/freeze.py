"""Freezing parts of the model during adaptation (paper 001, section 5.3, Table 3): the reasoning modules
("RM"), the representation module ("rep."), both, or none. Table 3's tuned counts (294M shared; -43M
with RM frozen = 2 activated modules x 3 blocks; -64M with rep. frozen = 9 blocks) show that freezing RM
freezes the modules' blocks (adapters, router and stop gates stay tuned) and freezing rep. freezes the
representation blocks (the shared embeddings stay tuned: the decoder uses them)."""

from __future__ import annotations

from typing import Literal

from torch import nn

from worker.core.reasonformer.model import ReasonFormerForConditionalGeneration

Freeze = Literal["none", "representation", "reasoning", "both"]


def freeze(model: nn.Module, what: Freeze) -> None:
    """Set ``requires_grad=False`` on the frozen part (before the optimiser is built)."""
    if what == "none":
        return
    assert isinstance(model, ReasonFormerForConditionalGeneration), (
        f"only ReasonFormer has modules to freeze ({what})"
    )
    frozen: list[nn.Parameter] = []
    if what in ("representation", "both"):
        frozen += list(model.encoder.representation.parameters())
    if what in ("reasoning", "both"):
        reasoner = model.encoder.reasoner
        for step in range(model.reasoning.depth if model.reasoning.variant == "private" else 1):
            for module in reasoner.modules_at(step):
                frozen += list(module.blocks.parameters())
    for p in frozen:
        p.requires_grad_(False)
