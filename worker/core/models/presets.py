"""Tiny, randomly initialised models of the families the CARMA paper uses (GPT-2, Llama, Qwen2, Gemma),
built from HF configs, each with its family's real tokenizer (``tokenizers.py``), for tests and quick
demos. Names: ``tiny-gpt2``, ``tiny-llama``, ``tiny-qwen2``, ``tiny-gemma``, and the mixture-of-experts
``tiny-mixtral``, ``tiny-qwen2-moe``, ``tiny-olmoe`` (4 experts, top-2).

The widths are tiny (d = 32) but the vocabularies are the real ones (50k to 262k tokens), so spans, label
filtering and prompts behave as with the full models; the embedding dominates the parameter count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from transformers import PretrainedConfig

from worker.core.models.tokenizers import Family

TINY_WIDTH = dict(hidden=32, layers=4, heads=4, kv_heads=2, ffn=64, positions=512)


@dataclass(frozen=True)
class TinyPreset:
    name: str
    model_type: str  # transformers' model_type
    tokenizer: Family
    # Extra config fields (the MoE presets: experts, experts per token); empty for the dense families.
    extra: tuple[tuple[str, Any], ...] = ()

    def config(self, vocab_size: int, bos: int | None, eos: int | None, pad: int | None) -> PretrainedConfig:
        from transformers import AutoConfig

        w = TINY_WIDTH
        common: dict[str, Any] = dict(
            vocab_size=vocab_size, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad
        )
        if self.model_type == "gpt2":
            kwargs = dict(
                n_embd=w["hidden"], n_layer=w["layers"], n_head=w["heads"], n_positions=w["positions"]
            )
        else:
            kwargs = dict(
                hidden_size=w["hidden"],
                num_hidden_layers=w["layers"],
                num_attention_heads=w["heads"],
                num_key_value_heads=w["kv_heads"],
                intermediate_size=w["ffn"],
                max_position_embeddings=w["positions"],
                head_dim=w["hidden"] // w["heads"],
                tie_word_embeddings=True,
            )
        return AutoConfig.for_model(self.model_type, **common, **kwargs, **dict(self.extra))


PRESETS: dict[str, TinyPreset] = {
    p.name: p
    for p in (
        TinyPreset("tiny-gpt2", "gpt2", "gpt2"),
        TinyPreset("tiny-llama", "llama", "llama3"),
        TinyPreset("tiny-qwen2", "qwen2", "qwen3"),
        TinyPreset("tiny-gemma", "gemma", "gemma3"),
        # Mixture-of-experts families (experts-per-token on every router), 4 experts top-2.
        # Mixtral renormalises its top-k weights; Qwen2-MoE and OLMoE do not (norm_topk_prob False).
        TinyPreset(
            "tiny-mixtral", "mixtral", "llama3", (("num_local_experts", 4), ("num_experts_per_tok", 2))
        ),
        TinyPreset(
            "tiny-qwen2-moe",
            "qwen2_moe",
            "qwen3",
            (
                ("num_experts", 4),
                ("num_experts_per_tok", 2),
                ("moe_intermediate_size", 64),
                ("shared_expert_intermediate_size", 64),
            ),
        ),
        TinyPreset("tiny-olmoe", "olmoe", "gpt2", (("num_experts", 4), ("num_experts_per_tok", 2))),
    )
}
