"""CARMA's two tasks as next-token prediction of a single-token answer (paper 003, section 4.1 and
appendix B.1-B.2): inverse dictionary modelling (IDM, eq. 9: a definition -> the word it defines) and
sentiment classification (SC, eq. 10: a sentence -> positive | negative | neutral).

The prompt ends with an opening quote, so the answer is the token that follows it; only examples whose
answer is exactly one token of the model's tokenizer are kept (REFERENCE.md, CARMA: "single-token answers
only"), which makes the kept set depend on the tokenizer. Accuracy is exact match of the argmax over the
whole vocabulary (section 3, "Evaluation Metrics").
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from transformers import PreTrainedTokenizerBase

from worker.core.carma.spans import word_ids_from_offsets

TaskName = Literal["idm", "sc"]
PLACEHOLDER = "{text}"

# Prompts of the reference code (REFERENCE.md, CARMA): IDM `{definition} is called a "` for GPT-2, Llama
# and Qwen2; SC `The sentiment of {text} is "` for GPT-2 and Qwen. Where the reference names no prompt
# for a family (Gemma; Llama on SC) the same one is used; a spec may give its own (``data.prompt``).
DEFAULT_PROMPTS: dict[TaskName, str] = {
    "idm": '{text} is called a "',
    "sc": 'The sentiment of {text} is "',
}
FAMILY_PROMPTS: dict[tuple[TaskName, str], str] = {
    ("idm", "gpt2"): '{text} is called a "',
    ("idm", "llama"): '{text} is called a "',
    ("idm", "qwen2"): '{text} is called a "',
    ("sc", "gpt2"): 'The sentiment of {text} is "',
    ("sc", "qwen2"): 'The sentiment of {text} is "',
}
SENTIMENT_LABELS = ("positive", "negative", "neutral")


@dataclass(frozen=True)
class Example:
    text: str  # the task input: a definition (IDM) or a sentence (SC); never the template
    label: str  # the word (IDM) or the sentiment (SC)


@dataclass(frozen=True)
class Encoded:
    """One example as the model sees it."""

    example: Example
    input_ids: list[int]  # the rendered prompt, with the tokenizer's special tokens
    word_ids: list[int]  # per token, its word (spans.py), -1 for none
    label_id: int  # the answer's single token


def prompt_template(task: TaskName, model_type: str, custom: str | None = None) -> str:
    """The prompt of ``task`` for a model family (transformers' ``model_type``), or ``custom``."""
    template = custom or FAMILY_PROMPTS.get((task, model_type), DEFAULT_PROMPTS[task])
    assert template.count(PLACEHOLDER) == 1, f"a prompt holds {PLACEHOLDER} exactly once: {template!r}"
    return template


def render(template: str, text: str) -> str:
    return template.replace(PLACEHOLDER, text)


def label_token(tokenizer: PreTrainedTokenizerBase, label: str) -> int | None:
    """The single token the answer is, as it follows the prompt's opening quote (no leading space), or
    None when the tokenizer splits it."""
    ids = tokenizer.encode(label, add_special_tokens=False)
    return ids[0] if len(ids) == 1 else None


def encode(
    examples: Sequence[Example], tokenizer: PreTrainedTokenizerBase, template: str, max_length: int
) -> tuple[list[Encoded], dict[str, int]]:
    """Render, tokenise and span every example; keep those with a single-token answer and a prompt of at
    most ``max_length`` tokens. Returns the kept examples and the counts of dropped ones."""
    kept: list[Encoded] = []
    labels = {label: label_token(tokenizer, label) for label in {e.label for e in examples}}
    answerable = [e for e in examples if labels[e.label] is not None]  # only these are tokenised
    dropped = {"multi_token_label": len(examples) - len(answerable), "too_long": 0}
    if not answerable:
        return kept, dropped
    batch = [render(template, e.text) for e in answerable]
    enc = tokenizer(batch, return_offsets_mapping=True, return_special_tokens_mask=True)
    for k, example in enumerate(answerable):
        label_id = labels[example.label]
        assert label_id is not None
        ids = enc["input_ids"][k]
        if len(ids) > max_length:
            dropped["too_long"] += 1
            continue
        special = [bool(s) for s in enc["special_tokens_mask"][k]]
        word_ids = word_ids_from_offsets(batch[k], enc["offset_mapping"][k], special)
        kept.append(Encoded(example, list(ids), word_ids, label_id))
    return kept, dropped


@dataclass(frozen=True)
class Splits:
    train: list[Encoded]
    validation: list[Encoded]
    test: list[Encoded]


def split(items: Sequence[Encoded], seed: int = 42, limit: int | None = None) -> Splits:
    """Shuffle with ``seed``, keep the first ``limit``, split 80/10/10 (paper 003, section 4.1 and B.2: 80%
    train, the remaining 20% halved into validation and test; seed 42 as the reference)."""
    order = list(items)
    random.Random(seed).shuffle(order)
    if limit is not None:
        order = order[:limit]
    n_train = int(0.8 * len(order))
    n_val = (len(order) - n_train) // 2
    return Splits(order[:n_train], order[n_train : n_train + n_val], order[n_train + n_val :])


def sentiment_label(score: float, positive_above: float = 0.6, negative_below: float = 0.4) -> str:
    """SST's phrase score in [0, 1] -> a label (REFERENCE.md: > 0.6 positive, 0.4-0.6 neutral, < 0.4
    negative; the paper's B.2 states other cut-offs, hence the settings)."""
    if score > positive_above:
        return "positive"
    if score < negative_below:
        return "negative"
    return "neutral"
