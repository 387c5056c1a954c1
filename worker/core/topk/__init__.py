"""Inference-time experts-per-token against a cheap score (``topk_eval``): perplexity and
multiple-choice accuracy of causal LMs; the SRAVEN and ReasonFormer scores are their kinds' own."""

from worker.core.topk.lm import (
    ChoiceItem,
    Perplexity,
    choice_accuracy,
    load_choice_jsonl,
    perplexity,
    token_windows,
)

__all__ = ["ChoiceItem", "Perplexity", "choice_accuracy", "load_choice_jsonl", "perplexity", "token_windows"]
