"""Adapters (section 3.2.2), the stop gate (eq. 4), the router (eq. 3), initialisation from T5 (section
4.3.2), freezing (Table 3), save/load and generate."""

from __future__ import annotations

from pathlib import Path

import torch

from tests.worker.core.reasonformer.conftest import reasoning, right_padded, tiny_t5
from worker.core.reasonformer.adapter import Adapter
from worker.core.reasonformer.blocks import T5Context
from worker.core.reasonformer.build import load_model
from worker.core.reasonformer.freeze import freeze
from worker.core.reasonformer.model import ReasonFormerForConditionalGeneration, expand_skill_labels
from worker.core.reasonformer.routing import masked_mean
from worker.core.reasonformer.stop_gate import gated_residual


def test_zero_initialised_adapters_are_the_identity() -> None:
    adapter = Adapter(16, 4)
    z = torch.randn(2, 5, 16)
    assert torch.equal(adapter(z), z)
    rf = ReasonFormerForConditionalGeneration.from_t5(tiny_t5(), reasoning())
    module = rf.encoder.reasoner.skill_modules[0]
    assert all((p == 0).all() for n, p in module.named_parameters() if ".up." in n)
    h = torch.randn(3, 7, 64)
    ctx = T5Context(None, rf.encoder.representation.t5_position_bias(7))
    rf.eval()
    plain = h
    for block in module.blocks:
        plain = ctx.run(block, plain)  # the same blocks with no adapter at all
    for step in range(3):
        torch.testing.assert_close(module(h, ctx, step), plain)


def test_adapter_is_a_bottleneck_with_a_skip_connection() -> None:
    adapter = Adapter(6, 3)
    torch.nn.init.normal_(adapter.up.weight)
    z = torch.randn(4, 6)
    expected = z + adapter.up(torch.nn.functional.gelu(adapter.down(z)))
    torch.testing.assert_close(adapter(z), expected)


def test_stop_gate_interpolates_between_steps() -> None:
    prev, step = torch.randn(2, 3, 4), torch.randn(2, 3, 4)
    gate = torch.tensor([0.0, 0.25])
    out = gated_residual(prev, step, gate)
    torch.testing.assert_close(out[0], prev[0])
    torch.testing.assert_close(out[1], 0.75 * prev[1] + 0.25 * step[1])


def test_router_pools_the_router_block_output_per_step_head() -> None:
    rf = ReasonFormerForConditionalGeneration.from_t5(tiny_t5(), reasoning()).eval()
    router = rf.encoder.reasoner.router
    h = torch.randn(3, 7, 64)
    _, mask = right_padded()
    ctx = T5Context(None, rf.encoder.representation.t5_position_bias(7))
    for step in range(3):
        head = router.heads[step]
        pooled = masked_mean(ctx.run(router.block, h), mask)
        expected = head.down(torch.relu(head.up(head.norm(pooled))))
        torch.testing.assert_close(router(h, ctx, mask, step), expected)


def test_initialisation_copies_the_t5_blocks_of_section_4_3_2() -> None:
    t5 = tiny_t5(num_layers=6)
    shared = ReasonFormerForConditionalGeneration.from_t5(t5, reasoning(module_layers=3))
    private = ReasonFormerForConditionalGeneration.from_t5(
        t5, reasoning(variant="private", module_layers=1, adapter_bottleneck=None)
    )

    def same(a: torch.nn.Module, b: torch.nn.Module) -> bool:
        return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))

    src = t5.encoder.block
    assert all(same(shared.encoder.representation.blocks[i], src[i]) for i in range(2))
    for module in shared.encoder.reasoner.skill_modules:  # every skill from blocks 2..4 (the paper: 9..11)
        assert all(same(module.blocks[i], src[2 + i]) for i in range(3))
    for step in range(3):  # the private module of step i from block R + i
        assert all(same(m.blocks[0], src[2 + step]) for m in private.encoder.reasoner.modules_at(step))
    assert same(shared.decoder, t5.decoder) and torch.equal(shared.shared.weight, t5.shared.weight)


def test_skill_labels_expand_to_every_step() -> None:
    assert expand_skill_labels(torch.tensor([2, 0]), 3).tolist() == [[2, 2, 2], [0, 0, 0]]
    assert expand_skill_labels(torch.tensor([[1, 2]]), 3).tolist() == [[1, 2, -1]]


def test_save_pretrained_from_pretrained_round_trip(tmp_path: Path) -> None:
    rf = ReasonFormerForConditionalGeneration.from_t5(
        tiny_t5(), reasoning(variant="private", module_layers=1, adapter_bottleneck=None)
    ).eval()
    rf.save_pretrained(tmp_path)
    again = load_model(tmp_path).eval()
    assert isinstance(again, ReasonFormerForConditionalGeneration)
    assert again.reasoning == rf.reasoning
    ids, mask = right_padded()
    with torch.no_grad():
        a = rf(input_ids=ids, attention_mask=mask, decoder_input_ids=torch.zeros(3, 1, dtype=torch.long))
        b = again(input_ids=ids, attention_mask=mask, decoder_input_ids=torch.zeros(3, 1, dtype=torch.long))
    torch.testing.assert_close(a.logits, b.logits)
    assert torch.equal(
        rf.generate(input_ids=ids, attention_mask=mask, max_new_tokens=4),
        again.generate(input_ids=ids, attention_mask=mask, max_new_tokens=4),
    )


def test_freeze_options_of_table_3() -> None:
    rf = ReasonFormerForConditionalGeneration.from_t5(tiny_t5(), reasoning())
    freeze(rf, "reasoning")
    frozen = {n for n, p in rf.named_parameters() if not p.requires_grad}
    assert frozen and all(".skill_modules." in n and ".blocks." in n for n in frozen)
    rf2 = ReasonFormerForConditionalGeneration.from_t5(tiny_t5(), reasoning())
    freeze(rf2, "both")
    frozen2 = {n for n, p in rf2.named_parameters() if not p.requires_grad}
    assert frozen < frozen2 or len(frozen2) > len(frozen)
    assert all(("representation" in n) or (".blocks." in n and "skill_modules" in n) for n in frozen2)
    assert rf2.shared.weight.requires_grad and all(
        p.requires_grad for n, p in rf2.named_parameters() if "adapters" in n or "router" in n or "gates" in n
    )
