"""ReasonFormer (paper 001): a representation module and skill reasoning modules composed by a per-step
skill router and stop gate, on T5 (``model.py``) or a decoder-only backbone (``causal.py``)."""

from worker.core.reasonformer.causal import ReasonFormerForCausalLM
from worker.core.reasonformer.config import SKILLS, ReasonFormerConfig, ReasoningConfig, t5_preset
from worker.core.reasonformer.model import ReasonFormerForConditionalGeneration

__all__ = [
    "SKILLS",
    "ReasonFormerConfig",
    "ReasonFormerForCausalLM",
    "ReasonFormerForConditionalGeneration",
    "ReasoningConfig",
    "t5_preset",
]
