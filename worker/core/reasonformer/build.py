"""Building models: a T5 backbone from a preset, a local folder or a hub id; ReasonFormer initialised from
it (section 4.3.2) or plain T5 (the baseline); loading a saved model of either kind."""

from __future__ import annotations

import json
from pathlib import Path

from torch import nn
from transformers import T5ForConditionalGeneration

from worker.core.data.offline import local_model
from worker.core.reasonformer.config import T5_PRESETS, ReasoningConfig, t5_preset
from worker.core.reasonformer.model import ReasonFormerForConditionalGeneration

T5_VARIANT = "t5"  # the plain T5 baseline (Table 1's "T5" and "RPT-T5" columns)


def build_t5(
    backbone: str, vocab_size: int | None = None, dropout: float | None = None
) -> T5ForConditionalGeneration:
    """A T5: a preset (random init; ``vocab_size`` is the tokenizer's), else ``from_pretrained`` of a folder
    of the model store or a hub id (the real checkpoint, e.g. google/t5-v1_1-base, on machines that have
    it); ``offline.local_model`` refuses a name leading outside the store (``OutsideStore``)."""
    if backbone in T5_PRESETS:
        overrides: dict[str, object] = {}
        if vocab_size is not None:
            overrides["vocab_size"] = vocab_size
        if dropout is not None:
            overrides["dropout_rate"] = dropout
        return T5ForConditionalGeneration(t5_preset(backbone, **overrides))
    source = local_model(backbone)
    if dropout is not None:
        return T5ForConditionalGeneration.from_pretrained(source, dropout_rate=dropout)
    return T5ForConditionalGeneration.from_pretrained(source)


def build_model(
    variant: str,
    backbone: str,
    reasoning: ReasoningConfig | None,
    vocab_size: int | None = None,
    dropout: float | None = None,
) -> nn.Module:
    """Plain T5 (``variant == "t5"``) or ReasonFormer initialised from the backbone T5 (section 4.3.2)."""
    t5 = build_t5(backbone, vocab_size, dropout)
    if variant == T5_VARIANT:
        return t5
    assert reasoning is not None and reasoning.variant == variant, (
        f"variant {variant} needs its ReasoningConfig"
    )
    return ReasonFormerForConditionalGeneration.from_t5(t5, reasoning)


MODEL_DIR = "model"  # under a run's out_dir: the saved model a fine-tuning or topk_eval run starts from


def load_model(path: str | Path) -> nn.Module:
    """A model saved with ``save_pretrained``: ReasonFormer or plain T5, by its config's model_type."""
    model_type = json.loads((Path(path) / "config.json").read_text()).get("model_type")
    if model_type == "reasonformer_t5":
        return ReasonFormerForConditionalGeneration.from_pretrained(path)
    return T5ForConditionalGeneration.from_pretrained(path)


def model_reasoning(model: nn.Module) -> ReasoningConfig | None:
    """The reasoning part of a ReasonFormer; None for plain T5."""
    return model.reasoning if isinstance(model, ReasonFormerForConditionalGeneration) else None


def variant_of(model: nn.Module) -> str:
    rc = model_reasoning(model)
    return rc.variant if rc is not None else T5_VARIANT
