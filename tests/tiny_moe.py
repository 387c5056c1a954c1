"""Tiny random HF mixture-of-experts checkpoints (4 experts, top-2, 2 layers, d 32) with Llama 3's real
tokenizer, saved to a folder so a spec can name them by path; the CPU budget that splits one over the CPU
and the disk under a device_map."""

from __future__ import annotations

from pathlib import Path
from typing import Any

MOE_FIELDS = {
    "mixtral": {"num_local_experts": 4},
    "qwen2_moe": {
        "num_experts": 4,
        "moe_intermediate_size": 32,
        "shared_expert_intermediate_size": 32,
        "norm_topk_prob": False,
    },
}


def tiny_moe(folder: Path, model_type: str) -> str:
    from transformers import AutoConfig, AutoModelForCausalLM

    from worker.core.models.tokenizers import family_tokenizer

    tokenizer = family_tokenizer("llama3", fresh=True)
    config = AutoConfig.for_model(
        model_type,
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=64,
        num_experts_per_tok=2,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        **MOE_FIELDS[model_type],
    )
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def cpu_budget_for_one_layer(model: Any) -> int:
    """Bytes of a ``max_memory["cpu"]`` under which accelerate's ``device_map="auto"`` keeps the input
    embeddings and layer 0 on the CPU and sends layer 1 on to the disk (accelerate keeps room on its main
    device for the largest module, here the LM head, so that counts too)."""

    def size(module: Any) -> int:
        return sum(p.numel() * p.element_size() for p in module.parameters())

    layer = size(model.model.layers[0])
    return size(model.get_input_embeddings()) + size(model.get_output_embeddings()) + layer + layer // 2
