"""The model side of a spec: the core's ``ReasoningConfig`` and the label a model has in the paper's tables."""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn

from worker.core.reasonformer.build import T5_VARIANT, model_reasoning
from worker.core.reasonformer.config import ReasoningConfig
from worker.specs.reasonformer.common.model import ModelSpec

DISPLAY = {"shared": "Shared", "private": "Private", "single": "Single", "morm": "MoRM", "t5": "T5"}


def reasoning_config(model: ModelSpec, skills: Sequence[str]) -> ReasoningConfig | None:
    """The core's ReasoningConfig of a model spec (None for plain T5)."""
    if model.variant == T5_VARIANT:
        return None
    return ReasoningConfig(
        skills=tuple(skills),
        variant=model.variant,  # type: ignore[arg-type]  # t5 returned above
        depth=model.resolved_depth(),
        representation_layers=model.representation_layers,
        module_layers=model.module_layers,
        top_k=model.top_k,
        adapter_bottleneck=model.adapter_bottleneck if model.variant == "shared" else None,
        stop_gate=model.stop_gate and model.variant != "morm",  # MoRM: a mixture, no stop gate
        routing_loss_weight=model.resolved_routing_loss_weight(),
        router_hidden=model.router_hidden,
        general_skill=model.general_skill if model.general_skill in skills else None,
        dispatch=model.dispatch,
    )


def label_of(model: nn.Module, pretrained: bool) -> str:
    """Table 1's column names: T5 / RPT-T5, MoRM (S) / RPT-MoRM (S), Shared (S) / Shared (F), and
    " w/o RPT" for a ReasonFormer that skipped pre-training (Table 2)."""
    rc = model_reasoning(model)
    if rc is None:
        return "RPT-T5" if pretrained else "T5"
    variant = rc.variant
    activation = "(F)" if rc.k == rc.num_skills else "(S)"
    if variant == "morm":
        return f"{'RPT-' if pretrained else ''}MoRM {activation}"
    return f"{DISPLAY[variant]} {activation}{'' if pretrained else ' w/o RPT'}"
