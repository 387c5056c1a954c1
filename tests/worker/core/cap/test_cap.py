"""CAP: pooling equals a per-word loop; with every token its own word it is the clean forward; the
prefix-reused curve equals the naive recomputation (paper 003, appendix C.1)."""

from __future__ import annotations

import itertools

import pytest
import torch

import worker.core.cap.curve as curve
from tests.worker.core.carma.tiny import EXAMPLES, tiny, tiny_batch
from worker.core.cap import PROTOCOLS, cap_curve, cap_curve_naive, pool, run_from_layer, token_groups
from worker.core.cap.curve import length_chunks, pooled_logits
from worker.core.carma.batches import Batch
from worker.core.carma.residual import capture_inputs, last_token_logits
from worker.core.carma.spans import group_ids

pytestmark = pytest.mark.usefixtures("one_thread")


def test_token_groups_match_the_per_sequence_groups() -> None:
    word_ids = torch.tensor([[-1, 0, 0, 1, 2, 2], [0, 0, 1, -1, -1, -1]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]])
    group, num = token_groups(word_ids, mask)
    assert group.tolist() == [[0, 1, 1, 2, 3, 3], [0, 0, 1, -1, -1, -1]]
    assert num.tolist() == [4, 2]
    assert group[0].tolist() == group_ids(word_ids[0].tolist(), 6)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_pooling_equals_a_per_word_loop(protocol: str) -> None:
    """Appendix C.1: r_i = max | mean | sum of the states of constituent i."""
    torch.manual_seed(0)
    hidden = torch.randn(2, 6, 3, dtype=torch.float64)
    group = torch.tensor([[0, 1, 1, 2, 3, 3], [0, 0, 1, -1, -1, -1]])
    num = torch.tensor([4, 2])
    pooled, mask = pool(hidden, group, num, protocol)  # type: ignore[arg-type]
    assert pooled.shape == (2, 4, 3) and mask.tolist() == [[1, 1, 1, 1], [1, 1, 0, 0]]
    for b in range(2):
        for g in range(int(num[b])):
            members = hidden[b, group[b] == g]
            expected = {
                "max": members.max(dim=0).values,
                "mean": members.mean(dim=0),
                "sum": members.sum(dim=0),
            }
            torch.testing.assert_close(pooled[b, g], expected[protocol])
    assert float(pooled[1, 2:].abs().sum()) == 0.0  # padding groups are zeros


@pytest.mark.parametrize("name", ["tiny-gpt2", "tiny-llama", "tiny-qwen2"])
def test_every_token_its_own_word_is_the_clean_forward(name: str) -> None:
    lm = tiny(name)
    batch = tiny_batch(lm)
    singletons = Batch(
        batch.input_ids, batch.attention_mask, torch.full_like(batch.word_ids, -1), batch.labels
    )
    group, num = token_groups(singletons.word_ids, singletons.attention_mask)
    n = lm.num_layers
    with torch.no_grad():
        with capture_inputs(lm.model, range(n)) as stream:
            clean = last_token_logits(lm.model, batch.attention_mask, input_ids=batch.input_ids)
        for L in range(n):
            for protocol in PROTOCOLS:
                states, mask = pool(stream[L], group, num, protocol)
                assert torch.equal(mask, batch.attention_mask)
                logits = run_from_layer(lm.model, L, states, mask)
                torch.testing.assert_close(logits, clean, rtol=1e-4, atol=1e-4, msg=f"L={L} {protocol}")


@pytest.mark.parametrize("name", ["tiny-gpt2", "tiny-llama"])
def test_prefix_reuse_equals_the_naive_recomputation(name: str) -> None:
    lm = tiny(name)
    batches = [tiny_batch(lm), tiny_batch(lm, list(reversed(EXAMPLES)))]
    layers = list(range(lm.num_layers))
    reused, naive = cap_curve(lm.model, batches, layers), cap_curve_naive(lm.model, batches, layers)
    assert reused.correct == naive.correct and reused.clean_correct == naive.clean_correct
    assert reused.total == naive.total == sum(len(b) for b in batches)
    assert [x for _, x, _ in reused.accuracy("mean")] == [L / (lm.num_layers - 1) for L in layers]


@pytest.mark.parametrize("seed", range(20))
def test_length_chunks_cover_every_row_once_with_bounded_padding(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, 40, (int(torch.randint(1, 60, (1,), generator=g)),), generator=g).tolist()
    chunks = length_chunks(lengths, min_rows=4, slack=0.25)
    assert sorted(i for c in chunks for i in c) == list(range(len(lengths)))
    flat = [lengths[i] for c in chunks for i in c]
    assert flat == sorted(lengths, reverse=True)  # longest first, so each chunk's first row is its widest
    for c in chunks:
        padded, real = len(c) * lengths[c[0]], sum(lengths[i] for i in c)
        # a chunk grew past its first four rows only while the padding stayed within 25%
        assert len(c) <= 4 or padded <= 1.25 * real
    # a new chunk opened only where adding the row would have broken the bound
    for before, after in itertools.pairwise(chunks):
        grown = [*before, after[0]]
        assert len(before) >= 4 and len(grown) * lengths[grown[0]] > 1.25 * sum(lengths[i] for i in grown)


@pytest.mark.parametrize("name", ["tiny-gpt2", "tiny-llama"])
def test_chunked_pooled_rows_equal_one_padded_batch(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Running the pooled rows in chunks of similar length changes no logit (only the padding run)."""
    lm = tiny(name)
    batch = tiny_batch(lm)
    seen: list[int] = []

    def one_row_each(lengths: list[int]) -> list[list[int]]:
        seen.append(len(lengths))
        return [[i] for i in range(len(lengths))]

    monkeypatch.setattr(curve, "length_chunks", one_row_each)
    with torch.no_grad():
        with capture_inputs(lm.model, range(lm.num_layers)) as stream:
            last_token_logits(lm.model, batch.attention_mask, input_ids=batch.input_ids)
        for L in range(lm.num_layers):
            one = pooled_logits(lm.model, L, stream[L], batch, PROTOCOLS, chunked=False)
            rows = pooled_logits(lm.model, L, stream[L], batch, PROTOCOLS, chunked=True)
            assert one.shape == (len(PROTOCOLS) * len(batch), lm.model.config.vocab_size)
            torch.testing.assert_close(rows, one, rtol=1e-4, atol=1e-4, msg=f"L={L}")
    assert len(seen) == lm.num_layers  # the chunked path ran, one row per call


def test_the_pooled_rows_run_in_chunks_on_a_cpu_and_as_one_batch_on_a_gpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Unless told, the pooled rows chunk where padding costs (a CPU), not where each call does (a GPU)."""
    assert curve.chunks_by_default(torch.device("cpu"))
    assert not curve.chunks_by_default(torch.device("cuda", 0))
    lm = tiny("tiny-llama")
    batch = tiny_batch(lm)
    seen: list[int] = []
    real = curve.length_chunks
    monkeypatch.setattr(curve, "length_chunks", lambda lengths: seen.append(len(lengths)) or real(lengths))
    with torch.no_grad():
        with capture_inputs(lm.model, [1]) as stream:
            last_token_logits(lm.model, batch.attention_mask, input_ids=batch.input_ids)
        pooled_logits(lm.model, 1, stream[1], batch, PROTOCOLS)  # on this CPU: chunked
        assert len(seen) == 1
        monkeypatch.setattr(curve, "chunks_by_default", lambda device: False)  # as on a GPU
        pooled_logits(lm.model, 1, stream[1], batch, PROTOCOLS)
        assert len(seen) == 1


def test_blocks_below_the_start_layer_are_not_run() -> None:
    lm = tiny("tiny-llama")
    batch = tiny_batch(lm)
    calls: list[int] = []
    blocks = lm.model.model.layers
    handles = [b.register_forward_hook(lambda m, a, o, i=i: calls.append(i)) for i, b in enumerate(blocks)]
    try:
        with capture_inputs(lm.model, [2]) as stream, torch.no_grad():
            last_token_logits(lm.model, batch.attention_mask, input_ids=batch.input_ids)
        calls.clear()
        group, num = token_groups(batch.word_ids, batch.attention_mask)
        states, mask = pool(stream[2], group, num, "mean")
        with torch.no_grad():
            run_from_layer(lm.model, 2, states, mask)
    finally:
        for h in handles:
            h.remove()
    assert calls == [2, 3]
    assert all(not type(b).__name__.startswith("_Pass") for b in blocks)  # restored
