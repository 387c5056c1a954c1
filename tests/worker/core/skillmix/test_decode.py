"""The student's own decoding loop (worker/core/skillmix/decode.py) against HF ``generate`` and a forward
without cache, on tiny random models of several families: the shared prefix and duplicate prompts run
once and give each row the logits it has alone, greedy batches write token for token what one prompt at
a time writes with ``generate`` (rows ending early included), finished rows leave the batch, seeded
sampling writes the same text batched and alone, and a model the loop does not take falls back to
``generate``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from transformers import MistralConfig, MistralForCausalLM

from worker.core.models import LoadedModel, load_model
from worker.core.skillmix.chat import Sampling, user
from worker.core.skillmix.decode import (
    FEW_ROWS,
    LoopOptions,
    decode,
    few_rows_linears,
    prefill,
    stop_tokens,
    unsupported,
)
from worker.core.skillmix.hf_chat import HFChat, render_chat

FAMILIES = ["tiny-llama", "tiny-qwen2", "tiny-gpt2", "tiny-mixtral"]
# one shared opening, topics of different lengths (the suffixes need pads), a duplicate, a short one
TOPICS = [
    "bees",
    "the tides of the northern sea and the moon",
    "bees",
    "a cat",
    "gardening in a small city flat with three windows",
]
NEW = 10


@pytest.fixture(scope="module", params=FAMILIES)
def lm(request: pytest.FixtureRequest) -> Iterator[LoadedModel]:
    """A tiny preset whose layers (not its embeddings) are redrawn with std 0.5: with the presets' small
    init and tied embeddings, greedy decoding only repeats the prompt's last token, which would make
    "the same tokens" an easy check."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors on a shared 2-core machine
    loaded = load_model(request.param, seed=0)
    loaded.model.eval()
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in loaded.model.named_parameters():
            if p.dim() >= 2 and not any(e in name for e in ("embed", "wte", "wpe")):
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    yield loaded
    torch.set_num_threads(threads)


def prompts_of(lm: LoadedModel, topics: list[str] = TOPICS) -> list[list[int]]:
    chat = HFChat(lm.model, lm.tokenizer, "test")
    return [
        chat.tokenize(render_chat(lm.tokenizer, [user(f"Write two sentences about {t}, please.")]))
        for t in topics
    ]


def alone_with_generate(lm: LoadedModel, prompt: list[int], new: int, stop: set[int]) -> list[int]:
    """One prompt at a time, greedy, with plain HF generate (no padding, no sharing): the reference."""
    out = lm.model.generate(  # type: ignore[operator]
        input_ids=torch.tensor([prompt]),
        attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
        max_new_tokens=new,
        do_sample=False,
        eos_token_id=sorted(stop),
        pad_token_id=lm.tokenizer.pad_token_id or lm.tokenizer.eos_token_id,
        temperature=None,
        top_p=None,
        top_k=None,
    )
    return [int(t) for t in out[0, len(prompt) :]]


def early_stop(lm: LoadedModel, prompts: list[list[int]]) -> set[int]:
    """Stop tokens that end the first prompt's greedy reply after a few tokens but not the second's: a
    batch with a row ending early. (Random tiny models rarely write their real end of sequence.)"""
    real = stop_tokens(lm.model, lm.tokenizer.eos_token_id)
    first = alone_with_generate(lm, prompts[0], NEW, real)
    second = alone_with_generate(lm, prompts[1], NEW, real)
    for i in range(2, len(first)):
        if first[i] not in first[:i] and first[i] not in second:
            return real | {first[i]}
    raise AssertionError(f"no token of {first} ends it early without ending {second}")


@pytest.fixture
def stopping_early(lm: LoadedModel) -> Iterator[set[int]]:
    """The model's generation config stops on ``early_stop``'s tokens too (what the student reads)."""
    config = lm.model.generation_config
    saved = config.eos_token_id
    stop = early_stop(lm, prompts_of(lm))
    config.eos_token_id = sorted(stop)
    yield stop
    config.eos_token_id = saved


def pad_id(lm: LoadedModel) -> int:
    pad = lm.tokenizer.pad_token_id
    return int(pad if pad is not None else lm.tokenizer.eos_token_id)


@torch.no_grad()
@pytest.mark.heavy
def test_each_rows_first_logits_equal_a_forward_without_cache(lm: LoadedModel) -> None:
    prompts = prompts_of(lm)
    state = prefill(lm.model, prompts, pad_id(lm))
    # the chat layout and "Write two sentences about" ran once: the longest prefix all prompts share
    assert state.shared > 0
    assert all(p[: state.shared] == prompts[0][: state.shared] for p in prompts)
    assert len({p[state.shared] for p in prompts}) > 1
    assert state.distinct == len(prompts) - 1  # the duplicate "bees" prompt ran once
    assert state.logits.shape[0] == len(prompts)
    for row, prompt in enumerate(prompts):
        alone = lm.model(input_ids=torch.tensor([prompt])).logits[0, -1].float()
        torch.testing.assert_close(state.logits[row], alone, rtol=1e-4, atol=1e-5)
    assert state.positions.tolist() == [len(p) for p in prompts]


@torch.no_grad()
def test_without_a_common_prefix_the_pads_lead_and_the_logits_still_match(lm: LoadedModel) -> None:
    prompts = [p[i:] for p, i in zip(prompts_of(lm)[:3], (0, 1, 2), strict=True)]  # first tokens differ
    assert prompts[0][0] != prompts[1][0]
    state = prefill(lm.model, prompts, pad_id(lm))
    assert state.shared == 0
    for row, prompt in enumerate(prompts):
        alone = lm.model(input_ids=torch.tensor([prompt])).logits[0, -1].float()
        torch.testing.assert_close(state.logits[row], alone, rtol=1e-4, atol=1e-5)


@pytest.mark.heavy
def test_greedy_batch_writes_token_for_token_what_generate_writes_alone(
    lm: LoadedModel, stopping_early: set[int]
) -> None:
    prompts = prompts_of(lm)
    batched = decode(lm.model, prompts, [0] * len(prompts), 0.0, NEW, stopping_early, pad_id(lm))
    alone = [alone_with_generate(lm, p, NEW, stopping_early) for p in prompts]
    assert batched == alone
    assert len(batched[0]) < NEW and batched[0][-1] in stopping_early  # a row ended early, its stop kept
    assert len(batched[1]) == NEW
    # the student (its chat layout, its sort by length, its batches) writes the same texts
    chat = HFChat(lm.model, lm.tokenizer, "test", batch_size=4)
    convs = [[user(f"Write two sentences about {t}, please.")] for t in TOPICS]
    texts = chat.complete(convs, list(range(len(TOPICS))), Sampling(0.0, NEW))
    assert texts == [str(lm.tokenizer.decode(a, skip_special_tokens=True)).strip() for a in alone]


@pytest.mark.heavy
def test_finished_rows_leave_the_batch(lm: LoadedModel, stopping_early: set[int]) -> None:
    prompts = prompts_of(lm)
    seen: list[tuple[int, int]] = []  # (batch rows, tokens) of every forward the model runs

    def count(_: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        seen.append(tuple(kwargs["input_ids"].shape))  # type: ignore[arg-type]

    hook = lm.model.register_forward_pre_hook(count, with_kwargs=True)
    try:
        out = decode(lm.model, prompts, [0] * len(prompts), 0.0, NEW, stopping_early, pad_id(lm))
        steps_dropping = list(seen)
        seen.clear()
        kept = decode(
            lm.model,
            prompts,
            [0] * len(prompts),
            0.0,
            NEW,
            stopping_early,
            pad_id(lm),
            LoopOptions(drop_finished=False),
        )
        steps_keeping = list(seen)
    finally:
        hook.remove()
    assert kept == out
    shared = prefill(lm.model, prompts, pad_id(lm)).shared
    assert steps_dropping[0] == (1, shared)  # the common prefix, once, at batch 1
    assert steps_dropping[1][0] == len(prompts) - 1  # the distinct prompts' suffixes
    # one forward per new token after the first; each sees the rows that had not finished before it
    decode_rows = [rows for rows, tokens in steps_dropping[2:]]
    assert all(tokens == 1 for rows, tokens in steps_dropping[2:])
    assert len(decode_rows) == max(len(o) for o in out) - 1
    expected = [sum(1 for o in out if len(o) > step) for step in range(1, len(decode_rows) + 1)]
    assert decode_rows == expected
    assert min(decode_rows) < len(prompts)  # some row did leave
    assert [rows for rows, tokens in steps_keeping[2:]] == [len(prompts)] * len(decode_rows)


@pytest.mark.heavy
def test_seeded_sampling_writes_the_same_text_batched_alone_and_with_generate(lm: LoadedModel) -> None:
    convs = [[user(f"Write two sentences about {t}, please.")] for t in TOPICS]
    seeds = [11, 12, 13, 14, 15]
    sampling = Sampling(0.7, NEW)
    ours = HFChat(lm.model, lm.tokenizer, "test", batch_size=8)
    batched = ours.complete(convs, seeds, sampling)
    alone = [ours.complete([c], [s], sampling)[0] for c, s in zip(convs, seeds, strict=True)]
    generate = HFChat(lm.model, lm.tokenizer, "test", batch_size=1, use_generate=True)
    assert batched == alone == generate.complete(convs, seeds, sampling)
    assert batched[0] != batched[2]  # the same prompt, another seed: another text
    assert batched != ours.complete(convs, [s + 100 for s in seeds], sampling)


def test_a_model_the_loop_does_not_take_falls_back_to_generate() -> None:
    lm = load_model("tiny-llama", seed=0)
    model = lm.model.eval()
    assert unsupported(model, 100) is None
    model.generation_config.repetition_penalty = 1.3
    try:
        assert unsupported(model, 100) == "its generation config sets repetition_penalty"
        convs = [[user(f"Write two sentences about {t}, please.")] for t in TOPICS[:3]]
        ours = HFChat(model, lm.tokenizer, "test").complete(convs, [1, 2, 3], Sampling(0.0, 6))
        with_generate = HFChat(model, lm.tokenizer, "test", use_generate=True).complete(
            convs, [1, 2, 3], Sampling(0.0, 6)
        )
        assert ours == with_generate
    finally:
        model.generation_config.repetition_penalty = 1.0
    # a sliding window counts cache positions, pads included: fine below it, refused once reachable
    sliding = MistralForCausalLM(
        MistralConfig(
            vocab_size=64,
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            sliding_window=32,
        )
    )
    assert unsupported(sliding, 31) is None
    assert unsupported(sliding, 32) == "a sliding window of 32 within 32 positions"


def test_a_reserved_layer_holds_what_a_dynamic_layer_holds() -> None:
    """ReservedLayer writes into room reserved ahead instead of concatenating; through prefill-like
    chunks, growth past the room, a batch expansion, a row selection and a crop it returns and keeps the
    same keys and values as HF's DynamicLayer."""
    from transformers.cache_utils import DynamicLayer

    from worker.core.skillmix.decode import ReservedLayer

    gen = torch.Generator().manual_seed(0)
    ours, theirs = ReservedLayer(reserve=6), DynamicLayer()

    def step(batch: int, new: int) -> None:
        k, v = torch.randn(batch, 2, new, 4, generator=gen), torch.randn(batch, 2, new, 4, generator=gen)
        got, want = ours.update(k, v), theirs.update(k, v)
        for a, b in zip(got, want, strict=True):
            assert torch.equal(a, b)

    step(1, 3)  # a shared prefix at batch 1
    ours.batch_repeat_interleave(3)
    theirs.batch_repeat_interleave(3)
    step(3, 2)  # the suffixes
    step(3, 1)  # one new token: the room (6) is full
    step(3, 1)  # past it: the room grows
    step(3, 4)
    keep = torch.tensor([2, 0])
    ours.batch_select_indices(keep)
    theirs.batch_select_indices(keep)
    step(2, 1)
    ours.crop(-2)
    theirs.crop(-2)
    step(2, 1)
    assert ours.get_seq_length() == theirs.get_seq_length() == 11
    assert torch.equal(ours.keys, theirs.keys) and torch.equal(ours.values, theirs.values)


def test_the_reserved_cache_decodes_what_the_growing_cache_decodes(lm: LoadedModel) -> None:
    """The loop with its cache room reserved ahead writes the same greedy tokens as with HF's growing
    DynamicCache (the rest of this file checks the loop against ``generate``)."""
    prompts = [[1, 5, 9, 2, 7], [1, 5, 9, 4], [1, 5, 9, 2, 7], [1, 5, 3, 8, 8, 6]]
    runs = [
        decode(lm.model, prompts, [0, 1, 2, 3], 0.0, 12, set(), 0, LoopOptions(reserve_cache=reserve))
        for reserve in (True, False)
    ]
    assert runs[0] == runs[1] and all(len(r) == 12 for r in runs[0])


class _Quantised(torch.nn.Linear):
    """A subclass of nn.Linear (as bitsandbytes' layers are): its forward is its own business."""


class _Hooked(torch.nn.Linear):
    pass


def test_few_rows_linears_compute_f_linear_for_a_decode_step_and_leave_the_rest() -> None:
    """Patched layers give F.linear's product (up to summation order) for up to FEW_ROWS rows, with and
    without bias, on 2-D and 3-D inputs; more rows, other dtypes, subclasses and hooked layers keep their
    own forward; the patch is gone after the block, also when the block raises."""
    g = torch.Generator().manual_seed(0)
    plain, no_bias = torch.nn.Linear(24, 40), torch.nn.Linear(40, 16, bias=False)
    double, quantised, hooked = (
        torch.nn.Linear(8, 8).to(torch.float64),
        _Quantised(8, 8),
        torch.nn.Linear(8, 8),
    )
    hooked._hf_hook = object()  # what accelerate sets beside its own forward
    model = torch.nn.Sequential(plain, no_bias, double, quantised, hooked)
    others = (double, quantised, hooked)
    with torch.no_grad(), few_rows_linears(model) as patched:  # type: ignore[arg-type]
        assert patched == 2
        assert "forward" in plain.__dict__ and "forward" in no_bias.__dict__
        assert not any("forward" in m.__dict__ for m in others)
        for shape in [(1, 24), (8, 24), (3, 1, 24), (2, FEW_ROWS // 2, 24), (FEW_ROWS + 1, 24)]:
            x = torch.randn(shape, generator=g)
            hidden = plain(x)
            assert hidden.shape == (*shape[:-1], 40) and hidden.is_contiguous()
            torch.testing.assert_close(
                hidden, torch.nn.functional.linear(x, plain.weight, plain.bias), rtol=1e-5, atol=1e-5
            )
            torch.testing.assert_close(no_bias(hidden), hidden @ no_bias.weight.T, rtol=1e-5, atol=1e-5)
            assert hidden.view(*shape[:-1], 5, 8).shape[-2:] == (5, 8)  # what attention's view needs
    assert not any("forward" in m.__dict__ for m in model)
    with pytest.raises(RuntimeError, match="inside"), few_rows_linears(model):  # type: ignore[arg-type]
        raise RuntimeError("inside")
    assert not any("forward" in m.__dict__ for m in model)


def test_the_weight_major_kernels_decode_what_f_linear_decodes(lm: LoadedModel) -> None:
    """The loop with its decode steps' linear layers as (W @ x.T).T writes the same greedy tokens as with
    F.linear (the rest of this file checks the loop, which has them on, against ``generate``)."""
    prompts = [[1, 5, 9, 2, 7], [1, 5, 9, 4], [1, 5, 3, 8, 8, 6]]
    runs = [
        decode(lm.model, prompts, [0, 1, 2], 0.0, 12, set(), 0, LoopOptions(weight_major=on))
        for on in (True, False)
    ]
    assert runs[0] == runs[1] and all(len(r) == 12 for r in runs[0])
    assert not any("forward" in m.__dict__ for m in lm.model.modules())
