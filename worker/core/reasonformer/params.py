"""Parameter counts of a ReasonFormer or T5 model: total, activated per instance (Table 1's "Activated
Parameters") and tuned (Table 3's "#Tuned Para."). Tied parameters count once."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from torch import nn

from worker.core.reasonformer.model import ReasonFormerForConditionalGeneration


def count(params: Iterable[nn.Parameter]) -> int:
    seen: set[int] = set()
    total = 0
    for p in params:
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


@dataclass(frozen=True)
class ParameterCounts:
    total: int
    activated: int  # what one instance runs through: k of the n modules per step
    tuned: int  # requires_grad (after freezing)
    representation: int
    reasoning_modules: int  # every module's blocks and adapters
    router: int
    stop_gates: int


def parameter_counts(model: nn.Module) -> ParameterCounts:
    """Counts of a ``ReasonFormerForConditionalGeneration`` (or a plain T5, whose parts are zero and whose
    activated count is its total). Activated = total - (n - k)/n of the reasoning modules: an instance
    runs k of the n equally sized modules at every step (with its adapters for every step, shared variant)."""
    total = count(model.parameters())
    tuned = count(p for p in model.parameters() if p.requires_grad)
    if not isinstance(model, ReasonFormerForConditionalGeneration):
        return ParameterCounts(total, total, tuned, 0, 0, 0, 0)
    rc = model.reasoning
    reasoner = model.encoder.reasoner
    modules = count(
        p for name, p in reasoner.named_parameters() if not name.startswith(("router.", "gates."))
    )
    activated = total - modules * (rc.num_skills - rc.k) // rc.num_skills
    return ParameterCounts(
        total=total,
        activated=activated,
        tuned=tuned,
        representation=count(model.encoder.representation.parameters()),
        reasoning_modules=modules,
        router=count(reasoner.router.parameters()),
        stop_gates=count(reasoner.gates.parameters()) if reasoner.gates is not None else 0,
    )
