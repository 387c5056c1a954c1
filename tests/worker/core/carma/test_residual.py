"""The residual stream by hooks: block outputs as output_hidden_states gives them, except the last,
to which transformers 5.x applies the final norm; logits at the last real token."""

from __future__ import annotations

import pytest
import torch

from tests.worker.core.carma.tiny import tiny, tiny_batch
from worker.core.carma.residual import capture_inputs, capture_outputs, decoder_layers, last_token_logits

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("name", ["tiny-gpt2", "tiny-llama"])
def test_hooks_read_the_residual_stream_after_each_block(name: str) -> None:
    lm = tiny(name)
    batch = tiny_batch(lm)
    n = lm.num_layers
    with (
        torch.no_grad(),
        capture_outputs(lm.model, range(n)) as out,
        capture_inputs(lm.model, range(n)) as inp,
    ):
        hs = lm.model(
            input_ids=batch.input_ids, attention_mask=batch.attention_mask, output_hidden_states=True
        )
    hidden = hs.hidden_states  # n + 1 entries: embeddings, then after each block (the last one normed)
    for i in range(n - 1):
        assert torch.equal(out[i], hidden[i + 1]), i
        assert torch.equal(inp[i + 1], out[i]), i
    assert not torch.allclose(out[n - 1], hidden[n]), "the last hidden state has the final norm applied"
    assert len(decoder_layers(lm.model)) == n


def test_last_token_logits_pick_each_rows_last_real_position() -> None:
    lm = tiny("tiny-llama")
    batch = tiny_batch(lm)
    with torch.no_grad():
        full = lm.model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits  # [B, T, V]
        got = last_token_logits(lm.model, batch.attention_mask, input_ids=batch.input_ids)
    last = batch.attention_mask.sum(dim=1) - 1
    assert len(set(last.tolist())) > 1, "the batch should have rows of different lengths"
    torch.testing.assert_close(got, full[torch.arange(len(batch)), last])
