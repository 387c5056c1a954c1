"""Depth 1, one skill, full activation, no adapters, no stop gate: ReasonFormer computes exactly the
backbone it was cut from (HF's T5, Llama, Qwen2), on right-padded batches; the reasoning blocks receive
T5's position bias and the padding mask (DESIGN.md, the HF T5 pitfall)."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

from tests.worker.core.reasonformer.conftest import reasoning, right_padded, tiny_t5
from worker.core.reasonformer.causal import ReasonFormerForCausalLM
from worker.core.reasonformer.model import ReasonFormerForConditionalGeneration

PLAIN = dict(
    skills=("only",),
    variant="single",
    depth=1,
    representation_layers=2,
    module_layers=2,
    top_k=None,
    adapter_bottleneck=None,
    stop_gate=False,
    routing_loss_weight=0.0,
    general_skill=None,
)


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_depth1_single_skill_equals_hf_t5_on_right_padded_batches(attn: str) -> None:
    t5 = tiny_t5(num_layers=4, attn=attn)
    rf = ReasonFormerForConditionalGeneration.from_t5(t5, reasoning(**PLAIN)).eval()
    assert rf.config._attn_implementation == attn == rf.encoder.config._attn_implementation
    ids, mask = right_padded()
    labels = torch.randint(2, 40, (3, 5))
    with torch.no_grad():
        ref = t5(input_ids=ids, attention_mask=mask, labels=labels)
        out = rf(input_ids=ids, attention_mask=mask, labels=labels)
    torch.testing.assert_close(
        out.encoder_last_hidden_state, ref.encoder_last_hidden_state, rtol=1e-5, atol=1e-5
    )
    torch.testing.assert_close(out.logits, ref.logits, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out.loss, ref.loss)
    assert torch.equal(
        rf.generate(input_ids=ids, attention_mask=mask, max_new_tokens=6, do_sample=False),
        t5.generate(input_ids=ids, attention_mask=mask, max_new_tokens=6, do_sample=False),
    )


def test_padding_mask_reaches_the_reasoning_blocks() -> None:
    """Changing a padded token's id changes nothing; without the mask in the later blocks it would."""
    rf = ReasonFormerForConditionalGeneration.from_t5(tiny_t5(num_layers=4), reasoning(**PLAIN)).eval()
    ids, mask = right_padded()
    other = ids.clone()
    other[1, -1] = 7  # row 1 is padded from position T-3
    with torch.no_grad():
        a = rf.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        b = rf.encoder(input_ids=other, attention_mask=mask).last_hidden_state
    torch.testing.assert_close(a[1, :4], b[1, :4])


@pytest.mark.parametrize(
    ("config_cls", "model_cls"), [(LlamaConfig, LlamaForCausalLM), (Qwen2Config, Qwen2ForCausalLM)]
)
def test_decoder_only_depth1_single_skill_equals_the_hf_causal_lm(config_cls: type, model_cls: type) -> None:
    config = config_cls(
        vocab_size=40,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    lm = model_cls(config).eval()
    ids, mask = right_padded()
    with torch.no_grad():
        ref = lm(input_ids=ids, attention_mask=mask).logits
    rf = ReasonFormerForCausalLM(lm, reasoning(**PLAIN)).eval()
    with torch.no_grad():
        out = rf(ids, mask).logits
    real = mask.bool()
    torch.testing.assert_close(out[real], ref[real], rtol=1e-5, atol=1e-5)
