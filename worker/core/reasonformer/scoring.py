"""Evaluation (paper 001, section 4.1): multiple choice by the log-likelihood of each option ("we select
the option with the highest log-likelihood score as answer"), as a sum over the option's tokens and
length-normalised (the mean per token); exact match for generative tasks (HotpotQA's EM).
"""

from __future__ import annotations

import re
import string

import torch
from torch import Tensor


def sequence_log_likelihood(logits: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
    """Sum of log p(label token) over each sequence's labelled positions, and their count.

    logits: [N, T, V]; labels: [N, T] long, -100 = not scored. Returns (sum [N] float64, count [N] long).
    The per-token log-probabilities are float32 (the softmax over V); their sum is accumulated in float64,
    so two options whose scores are a near tie (paper 001, section 4.1: the highest log-likelihood wins)
    are not ordered by float32 rounding over long options.
    """
    logp = torch.log_softmax(logits.float(), dim=-1)  # [N, T, V]
    scored = labels != -100  # [N, T]
    token_ll = logp.gather(2, labels.clamp(min=0)[..., None]).squeeze(-1)  # [N, T]
    return token_ll.double().masked_fill(~scored, 0.0).sum(dim=1), scored.sum(dim=1)


def choose(sum_ll: Tensor, count: Tensor, option_mask: Tensor) -> tuple[Tensor, Tensor]:
    """The chosen option per instance by summed and by length-normalised log-likelihood.

    sum_ll, count: [B, C]; option_mask: [B, C] bool (instances may have fewer options). Returns
    (by_sum [B], by_mean [B]) long indices.
    """
    neg_inf = torch.finfo(sum_ll.dtype).min
    mean_ll = sum_ll / count.clamp(min=1).to(sum_ll.dtype)
    by_sum = sum_ll.masked_fill(~option_mask, neg_inf).argmax(dim=1)
    by_mean = mean_ll.masked_fill(~option_mask, neg_inf).argmax(dim=1)
    return by_sum, by_mean


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD/HotpotQA answer normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, reference: str) -> bool:
    return normalize_answer(prediction) == normalize_answer(reference)
