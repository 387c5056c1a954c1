"""Evaluation (section 4.1): option log-likelihood (sum and length-normalised) and exact match, against
independent computations."""

from __future__ import annotations

import math

import pytest
import torch

from tests.worker.core.reasonformer.conftest import reasoning, right_padded, tiny_t5
from worker.core.reasonformer.data.example import Example
from worker.core.reasonformer.data.tokenizer import SymbolTokenizer
from worker.core.reasonformer.evaluate import choice_log_likelihoods, predict, task_scores
from worker.core.reasonformer.model import ReasonFormerForConditionalGeneration
from worker.core.reasonformer.scoring import choose, exact_match, normalize_answer, sequence_log_likelihood


def test_sequence_log_likelihood_equals_a_loop() -> None:
    logits = torch.randn(2, 4, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    labels = torch.tensor([[1, 5, -100, -100], [0, 2, 3, 4]])
    ll, count = sequence_log_likelihood(logits, labels)
    for n in range(2):
        expected = 0.0
        for t in range(4):
            y = labels[n, t].item()
            if y == -100:
                continue
            row = logits[n, t].tolist()
            expected += row[y] - math.log(sum(math.exp(v) for v in row))
        assert ll[n].item() == pytest.approx(expected, rel=1e-6)
    assert count.tolist() == [2, 4]


def test_option_sums_accumulate_in_float64() -> None:
    """Each token's log-probability comes out of a float32 softmax; the option's sum over its tokens is
    accumulated in float64 (a float32 sum over long options can order a near tie by rounding). Checked
    against math.fsum (exactly rounded) of the same float32 per-token values."""
    gen = torch.Generator().manual_seed(3)
    logits = torch.randn(3, 3000, 11, generator=gen) * 4  # float32, as a model gives them
    labels = torch.randint(0, 11, (3, 3000), generator=gen)
    labels[2, 1500:] = -100
    ll, count = sequence_log_likelihood(logits, labels)
    assert ll.dtype == torch.float64 and count.tolist() == [3000, 3000, 1500]
    token_ll = torch.log_softmax(logits, dim=-1).gather(2, labels.clamp(min=0)[..., None]).squeeze(-1)
    for n in range(3):
        values = [
            float(v) for v, y in zip(token_ll[n].tolist(), labels[n].tolist(), strict=True) if y != -100
        ]
        assert abs(ll[n].item() - math.fsum(values)) < 1e-9, (ll[n].item(), math.fsum(values))


def test_choose_by_sum_and_by_mean_can_differ() -> None:
    sums = torch.tensor([[-3.0, -4.0, 0.0]])
    counts = torch.tensor([[1, 4, 1]])
    mask = torch.tensor([[True, True, False]])  # the third slot is padding
    by_sum, by_mean = choose(sums, counts, mask)
    assert by_sum.tolist() == [0] and by_mean.tolist() == [1]


@pytest.mark.parametrize("variant", ["shared", "t5"])
def test_option_log_likelihoods_equal_one_forward_per_option(variant: str) -> None:
    t5 = tiny_t5()
    model = t5 if variant == "t5" else ReasonFormerForConditionalGeneration.from_t5(t5, reasoning()).eval()
    ids, mask = right_padded(B=2)
    options = [[[3, 4, 1], [5, 1]], [[6, 7, 8, 1], [9, 1], [3, 1]]]
    sums, counts, option_mask, _ = choice_log_likelihoods(model, ids, mask, options)
    assert option_mask.tolist() == [[True, True, False], [True, True, True]]
    for b, opts in enumerate(options):
        for c, tokens in enumerate(opts):
            labels = torch.tensor([tokens])
            with torch.no_grad():
                logits = model(input_ids=ids[b : b + 1, : int(mask[b].sum())], labels=labels).logits[0]
            logp = torch.log_softmax(logits.double(), -1)
            expected = sum(logp[t, y].item() for t, y in enumerate(tokens))
            assert sums[b, c].item() == pytest.approx(expected, abs=1e-4)
            assert counts[b, c].item() == len(tokens)


def test_predict_scores_choice_and_generative_tasks() -> None:
    tok = SymbolTokenizer(["x", "y", "z", "1", "2"])
    model = ReasonFormerForConditionalGeneration.from_t5(
        tiny_t5(vocab_size=tok.vocab_size), reasoning()
    ).eval()
    examples = [
        Example("mc", "x y", "1", options=("1", "2"), answer=0),
        Example("mc", "y z", "2", options=("1", "2"), answer=1),
        Example("gen", "x z", "1 2"),
    ]
    pred = predict(model, examples, tok, batch_size=2, max_new_tokens=4)
    scores = {s.task: s for s in task_scores(pred)}
    assert scores["mc"].metric == "accuracy" and scores["mc"].count == 2
    assert scores["gen"].metric == "exact_match" and scores["gen"].value in (0.0, 1.0)
    assert len(pred.probs) == 3 and pred.probs[0].shape == (3, 4)  # [steps, skills] per example
    torch.testing.assert_close(pred.probs[0].sum(-1), torch.ones(3))


def test_exact_match_normalises_like_squad() -> None:
    assert normalize_answer("The  Kansas Song!") == "kansas song"
    assert exact_match("the Kansas song", "Kansas Song.")
    assert not exact_match("3 1 2", "3 2 1")
