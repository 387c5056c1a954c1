"""Perplexity and multiple-choice scores (worker.core.topk.lm) against independent computations."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from transformers import MixtralConfig, MixtralForCausalLM

from worker.core.models import load_model
from worker.core.topk import ChoiceItem, load_choice_jsonl, perplexity, token_windows
from worker.core.topk.lm import choice_accuracy, choice_log_likelihoods

pytestmark = pytest.mark.usefixtures("one_thread")


def tiny_lm() -> MixtralForCausalLM:
    torch.manual_seed(0)
    config = MixtralConfig(
        vocab_size=50,
        hidden_size=16,
        intermediate_size=24,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        num_local_experts=4,
        num_experts_per_tok=2,
    )
    return MixtralForCausalLM(config).eval()


def test_windows_split_the_text_and_drop_a_one_token_tail() -> None:
    assert token_windows(range(9), 4) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert token_windows(range(10), 4) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert token_windows(range(10), 4, max_tokens=6) == [[0, 1, 2, 3], [4, 5]]


def test_perplexity_is_exp_of_the_mean_nll_computed_prefix_by_prefix() -> None:
    model = tiny_lm()
    ids = torch.randint(0, 50, (23,), generator=torch.Generator().manual_seed(1)).tolist()
    windows = token_windows(ids, 8)  # 8, 8, 7 tokens: two batched, the last alone
    got = perplexity(model, windows, batch_size=2)
    nlls = []
    with torch.no_grad():
        for w in windows:
            for t in range(1, len(w)):
                logits = model(input_ids=torch.tensor([w[:t]])).logits[0, -1]  # the next-token distribution
                nlls.append(-torch.log_softmax(logits, dim=-1)[w[t]].item())
    assert got.tokens == len(nlls) == 20
    assert got.nll == pytest.approx(sum(nlls) / len(nlls), rel=1e-5)
    assert got.perplexity == pytest.approx(math.exp(sum(nlls) / len(nlls)), rel=1e-5)
    # each window's own mean, in the windows' order (the 7-token window ran in a batch of its own)
    assert got.window_nll == pytest.approx(
        [sum(nlls[:7]) / 7, sum(nlls[7:14]) / 7, sum(nlls[14:]) / 6], rel=1e-5
    )


def test_choice_log_likelihood_equals_each_choice_scored_alone() -> None:
    lm = load_model("tiny-mixtral", seed=0)
    model, tok = lm.model.eval(), lm.tokenizer
    item = ChoiceItem("Q: What do bees make? A:", ["honey", "a long wooden table", "silk"], 0)
    got = choice_log_likelihoods(model, tok, item)
    assert got.dtype == torch.float64  # per-token float32 log-probabilities, summed in float64
    prompt = tok(item.prompt)["input_ids"]
    with torch.no_grad():
        for c, choice in enumerate(item.choices):
            cont = tok(" " + choice, add_special_tokens=False)["input_ids"]
            logp = torch.log_softmax(model(input_ids=torch.tensor([prompt + cont])).logits[0], dim=-1)
            want = sum(logp[len(prompt) - 1 + i, t].item() for i, t in enumerate(cont))
            assert got[c].item() == pytest.approx(want, rel=1e-4, abs=1e-4)
    best = int(got.argmax())
    assert choice_accuracy(model, tok, [ChoiceItem(item.prompt, item.choices, best)]) == 1.0
    assert choice_accuracy(model, tok, [ChoiceItem(item.prompt, item.choices, (best + 1) % 3)]) == 0.0


def test_choice_jsonl_loads_and_refuses_malformed_lines(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"question": "a", "choices": ["x", "y"], "answer": 1},
                {"prompt": "b", "choices": ["u", "v", "w"], "answer": 0},
            ]
        )
    )
    assert load_choice_jsonl(good) == [ChoiceItem("a", ["x", "y"], 1), ChoiceItem("b", ["u", "v", "w"], 0)]
    assert len(load_choice_jsonl(good, limit=1)) == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question": "a", "choices": ["x", "y"], "answer": 2}))
    with pytest.raises(ValueError, match=r"bad.jsonl:1: 'answer'"):
        load_choice_jsonl(bad)
