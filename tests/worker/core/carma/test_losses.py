"""CARMA's losses against independent per-pair / per-layer Python loops (paper 003, eqs. 5-8)."""

from __future__ import annotations

import math

import pytest
import torch

from worker.core.carma.losses import (
    carma_loss,
    mi_loss,
    positive_pairs,
    sample_negatives,
    stability_loss,
    total_loss,
)

pytestmark = pytest.mark.usefixtures("one_thread")

# two right-padded sequences: words of 2, 1, 3 tokens (+ BOS) and of 1, 2 tokens (+ 2 pads)
WORD_IDS = torch.tensor([[-1, 0, 0, 1, 2, 2, 2], [0, 1, 1, -1, -1, -1, -1]])
MASK = torch.tensor([[1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0, 0]])


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(a @ b / (a.norm() * b.norm()))


def test_positive_pairs_are_the_token_pairs_of_multi_token_words() -> None:
    b, i, j = positive_pairs(WORD_IDS, MASK)
    pairs = sorted(zip(b.tolist(), i.tolist(), j.tolist()))
    assert pairs == [(0, 1, 2), (0, 4, 5), (0, 4, 6), (0, 5, 6), (1, 1, 2)]


def test_negatives_are_real_tokens_outside_the_word() -> None:
    b, i, j = positive_pairs(WORD_IDS, MASK)
    torch.manual_seed(0)
    pairs = sample_negatives(WORD_IDS, MASK, b, i, j, num_negatives=200)
    for p in range(len(pairs)):
        seq, anchor = int(pairs.batch[p]), int(pairs.anchor[p])
        for m in pairs.negatives[p].tolist():
            assert MASK[seq, m] == 1, f"padding position {m} drawn as a negative"
            assert WORD_IDS[seq, m] != WORD_IDS[seq, anchor], (
                "a token of the anchor's word drawn as a negative"
            )
    # every allowed position is drawn eventually (uniform with replacement): sequence 1 has only position 0
    assert set(pairs.negatives[pairs.batch == 1].flatten().tolist()) == {0}


def test_mi_loss_equals_a_per_pair_loop() -> None:
    torch.manual_seed(1)
    Lr, B, T, d, tau = 3, 2, 7, 5, 0.1
    hidden = torch.randn(Lr, B, T, d, dtype=torch.float64)
    b, i, j = positive_pairs(WORD_IDS, MASK)
    pairs = sample_negatives(WORD_IDS, MASK, b, i, j, num_negatives=5)
    got = mi_loss(hidden, pairs, temperature=tau)

    per_layer = []
    for k in range(Lr):
        terms = []
        for p in range(len(pairs)):
            seq, a, pos = int(pairs.batch[p]), int(pairs.anchor[p]), int(pairs.positive[p])
            h = hidden[k, seq]
            s_pos = math.exp(cosine(h[a], h[pos]) / tau)
            s_neg = sum(math.exp(cosine(h[a], h[m]) / tau) for m in pairs.negatives[p].tolist())
            terms.append(math.log(s_pos / (s_pos + s_neg)))
        per_layer.append(sum(terms) / len(terms))
    expected = -sum(per_layer) / Lr
    assert float(got) == pytest.approx(expected, rel=1e-9), (float(got), expected)


def test_a_batch_without_multi_token_words_gives_zero_loss_and_a_clean_backward() -> None:
    word_ids = torch.tensor([[0, 1, 2], [0, 1, -1]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    hidden = torch.randn(2, 2, 3, 4, requires_grad=True)
    b, i, j = positive_pairs(word_ids, mask)
    pairs = sample_negatives(word_ids, mask, b, i, j, num_negatives=5)
    loss = mi_loss(hidden, pairs)
    assert len(pairs) == 0 and float(loss.detach()) == 0.0
    loss.backward()
    assert hidden.grad is not None and float(hidden.grad.abs().sum()) == 0.0


def test_pairs_with_no_possible_negative_are_dropped() -> None:
    word_ids = torch.tensor([[0, 0, 0]])  # the whole sequence is one word
    b, i, j = positive_pairs(word_ids, torch.ones(1, 3, dtype=torch.long))
    assert len(b) == 3
    pairs = sample_negatives(word_ids, torch.ones(1, 3, dtype=torch.long), b, i, j, num_negatives=5)
    assert len(pairs) == 0


def test_stability_loss_equals_a_per_layer_loop_over_real_positions() -> None:
    torch.manual_seed(2)
    Lk, B, T, d, eps = 4, 2, 7, 3, 1e-8
    hidden = torch.randn(Lk, B, T, d, dtype=torch.float64)
    hidden[:, 1, 3:] = 100.0  # padding of sequence 1: must not count
    got = stability_loss(hidden, MASK, eps)

    real = [(b, t) for b in range(B) for t in range(T) if MASK[b, t]]
    expected = 0.0
    for k in range(Lk - 1):
        diff = sum(float(((hidden[k + 1, b, t] - hidden[k, b, t]) ** 2).sum()) for b, t in real)
        e_k = sum(float((hidden[k, b, t] ** 2).sum()) for b, t in real)
        e_k1 = sum(float((hidden[k + 1, b, t] ** 2).sum()) for b, t in real)
        n = len(real) * d
        expected += (diff / n) / (e_k / n + e_k1 / n + eps)
    assert float(got) == pytest.approx(expected, rel=1e-9)
    assert float(stability_loss(hidden[:1], MASK)) == 0.0  # one layer: no pair


def test_total_is_eq_8_and_lambda_zero_is_fine_tuning() -> None:
    task, mi, stab = torch.tensor(2.0), torch.tensor(3.0), torch.tensor(0.5)
    carma = carma_loss(mi, stab, gamma=0.2, eta=0.3)  # eq. 7
    assert float(carma) == pytest.approx(0.2 * 3.0 + 0.3 * 0.5)
    assert float(total_loss(task, carma, 0.25)) == pytest.approx(0.75 * 2.0 + 0.25 * 0.75)  # eq. 8
    assert total_loss(task, carma, 0.0) is task
    with pytest.raises(ValueError, match=r"lambda must be in \[0, 1\].*got 1.5"):
        total_loss(task, carma, 1.5)
