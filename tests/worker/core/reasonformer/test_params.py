"""Parameter counts of shared, private and single against their formulas (independent arithmetic on the
T5 dimensions), activated counts (Table 1), and the T5-v1.1-base sized counts the doc reports."""

from __future__ import annotations

import pytest
import torch
from transformers import T5Config, T5ForConditionalGeneration

from tests.worker.core.reasonformer.conftest import reasoning, tiny_t5
from worker.core.reasonformer.config import ReasonFormerConfig, ReasoningConfig, t5_preset
from worker.core.reasonformer.model import ReasonFormerForConditionalGeneration
from worker.core.reasonformer.params import parameter_counts


def formula(c: T5Config, rc: ReasoningConfig) -> tuple[int, int]:
    """(total, activated) from the dimensions alone."""
    d, inner, ff, V = c.d_model, c.num_heads * c.d_kv, c.d_ff, c.vocab_size
    bias = c.relative_attention_num_buckets * c.num_heads
    enc_block = 4 * d * inner + 3 * d * ff + 2 * d  # attention, gated FFN (wi_0, wi_1, wo), two norms
    dec_block = enc_block + 4 * d * inner + d  # + cross-attention and its norm
    n, S, L, R, k, h, b = (
        rc.num_skills,
        rc.depth,
        rc.layers,
        rc.representation_layers,
        rc.k,
        rc.router_hidden,
        rc.adapter_bottleneck,
    )
    head = lambda out: d + d * h + h + h * out + out  # noqa: E731 - norm, up, down
    pair = 2 * (d * b + b + b * d + d) if b else 0
    base = (
        V * d + R * enc_block + bias + d + c.num_decoder_layers * dec_block + bias + d
    )  # shared embedding/LM head
    router = enc_block + S * head(n)
    gates = S * head(1) if rc.stop_gate else 0
    if rc.variant == "shared":
        module, copies = L * enc_block + (S * L * pair if rc.uses_adapters else 0), n
    elif rc.variant == "private":
        module, copies = L * enc_block, n * S
    else:
        module, copies = L * enc_block, n
    total = base + router + gates + copies * module
    return total, total - (n - k) * (copies // n) * module


@pytest.mark.parametrize(
    "rc",
    [
        reasoning(module_layers=2),
        reasoning(module_layers=1, top_k=None),
        reasoning(variant="private", module_layers=1, adapter_bottleneck=None),
        reasoning(variant="single", depth=1, module_layers=3, adapter_bottleneck=None, stop_gate=False),
        reasoning(adapter_bottleneck=None),
    ],
    ids=["shared-sparse", "shared-full", "private", "single", "shared-no-adapter"],
)
def test_parameter_counts_match_their_formulas(rc: ReasoningConfig) -> None:
    t5 = tiny_t5(num_layers=6)
    counts = parameter_counts(ReasonFormerForConditionalGeneration.from_t5(t5, rc))
    assert (counts.total, counts.activated) == formula(t5.config, rc)
    assert counts.tuned == counts.total


def test_t5_v1_1_base_counts_of_table_1() -> None:
    """Built on the meta device (no memory): the counts docs/experiments/reasonformer.md reports. transformers
    5.x ties T5's LM head to the embeddings; the untied checkpoint head adds 24.67M (32128 x 768)."""
    c = t5_preset("t5-v1_1-base")
    paper = dict(
        skills=("logic", "qa", "ner", "nli", "fact", "general"), representation_layers=9, router_hidden=256
    )
    untied_head = 32128 * 768
    got = {}
    for name, kw in {
        "shared-S": dict(variant="shared", module_layers=3, top_k=2, adapter_bottleneck=256),
        "shared-F": dict(variant="shared", module_layers=3, top_k=None, adapter_bottleneck=256),
        "private-S": dict(variant="private", module_layers=1, top_k=2, adapter_bottleneck=None),
        "morm-S": dict(
            variant="morm",
            depth=1,
            module_layers=3,
            top_k=2,
            adapter_bottleneck=None,
            stop_gate=False,
            routing_loss_weight=0.0,
        ),
        "morm-F": dict(
            variant="morm",
            depth=1,
            module_layers=3,
            top_k=None,
            adapter_bottleneck=None,
            stop_gate=False,
            routing_loss_weight=0.0,
        ),
    }.items():
        rc = ReasoningConfig(**paper, **kw)  # type: ignore[arg-type]
        with torch.device("meta"):
            model = ReasonFormerForConditionalGeneration(ReasonFormerConfig.of(c, rc))
        counts = parameter_counts(model)
        assert (counts.total, counts.activated) == formula(c, rc)
        got[name] = round((counts.activated + untied_head) / 1e6, 1)
    with torch.device("meta"):
        plain = parameter_counts(T5ForConditionalGeneration(c))
    got["t5"] = round((plain.total + untied_head) / 1e6, 1)
    assert got == {
        "shared-S": 291.3,
        "shared-F": 404.6,
        "private-S": 277.1,
        "morm-S": 276.1,
        "morm-F": 361.0,
        "t5": 247.6,
    }
