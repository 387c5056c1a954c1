"""Cheap scores of a causal LM, for sweeping experts-per-token at inference (``topk_eval``):
perplexity on a text and multiple-choice accuracy by option log-likelihood.

Both take any ``model(input_ids, attention_mask).logits`` (an HF causal LM); the experts-per-token knob is
``worker.core.models.routers``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn
from transformers import PreTrainedTokenizerBase


def token_windows(ids: Sequence[int], window: int, max_tokens: int | None = None) -> list[list[int]]:
    """Non-overlapping windows of ``window`` tokens (the last one shorter); a window of one token predicts
    nothing and is dropped. ``max_tokens`` caps the text first."""
    assert window >= 2, f"a window must hold at least 2 tokens (one context, one predicted), got {window}"
    ids = list(ids)[:max_tokens] if max_tokens is not None else list(ids)
    windows = [ids[i : i + window] for i in range(0, len(ids), window)]
    return [w for w in windows if len(w) >= 2]


@dataclass(frozen=True)
class Perplexity:
    perplexity: float
    nll: float  # mean negative log-likelihood per predicted token (nats)
    tokens: int  # predicted tokens
    # each window's mean NLL per predicted token (its len - 1 of them), in the order the windows came
    window_nll: tuple[float, ...] = ()


def perplexity(
    model: nn.Module, windows: Sequence[Sequence[int]], batch_size: int = 8, device: str = "cpu"
) -> Perplexity:
    """PPL = exp( (1/N) sum_t -log p(x_t | x_<t) ) over every token but each window's first (the usual
    definition, e.g. Jurafsky & Martin, Speech and Language Processing, 3rd ed., section 3.3, eq. 3.15;
    each window is an independent context). Windows of one length are batched; no padding is needed
    because the shorter last window runs alone. Each window's own mean NLL comes back too
    (``window_nll``): the total is their mean weighted by the windows' predicted tokens."""
    assert windows, "no window of at least 2 tokens: the text is too short"
    by_length: dict[int, list[int]] = {}  # window length -> the windows' places
    for n, w in enumerate(windows):
        by_length.setdefault(len(w), []).append(n)
    sums = [0.0] * len(windows)  # each window's summed NLL
    with torch.no_grad():
        for length, places in by_length.items():
            for i in range(0, len(places), batch_size):
                batch = places[i : i + batch_size]
                ids = torch.tensor(
                    [list(windows[n]) for n in batch], dtype=torch.long, device=device
                )  # [B, T]
                logits = model(input_ids=ids).logits.float()  # [B, T, V]
                nll = nn.functional.cross_entropy(
                    logits[:, :-1].reshape(-1, logits.shape[-1]),  # [B*(T-1), V]
                    ids[:, 1:].reshape(-1),  # [B*(T-1)]
                    reduction="none",
                ).view(len(batch), length - 1)  # [B, T-1]
                for n, total in zip(batch, nll.sum(dim=1).tolist(), strict=True):
                    sums[n] = float(total)
    total_tokens = sum(len(w) - 1 for w in windows)
    mean = sum(sums) / total_tokens
    per_window = tuple(total / (len(w) - 1) for total, w in zip(sums, windows, strict=True))
    return Perplexity(perplexity=math.exp(mean), nll=mean, tokens=total_tokens, window_nll=per_window)


@dataclass(frozen=True)
class ChoiceItem:
    prompt: str
    choices: list[str]
    answer: int  # index into choices


def load_choice_jsonl(path: str | Path, limit: int | None = None) -> list[ChoiceItem]:
    """Lines ``{"question" (or "prompt"): str, "choices": [str, ...], "answer": int index}``."""
    items: list[ChoiceItem] = []
    for n, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        prompt = row.get("question", row.get("prompt"))
        choices, answer = row.get("choices"), row.get("answer")
        if not isinstance(prompt, str) or not isinstance(choices, list) or len(choices) < 2:
            raise ValueError(f"{path}:{n}: needs 'question' (or 'prompt') and at least 2 'choices'")
        if not isinstance(answer, int) or not 0 <= answer < len(choices):
            raise ValueError(f"{path}:{n}: 'answer' must be an index into the {len(choices)} choices")
        items.append(ChoiceItem(prompt, [str(c) for c in choices], answer))
        if limit is not None and len(items) >= limit:
            break
    if not items:
        raise ValueError(f"{path}: no item")
    return items


def choice_log_likelihoods(
    model: nn.Module, tokenizer: PreTrainedTokenizerBase, item: ChoiceItem, device: str = "cpu"
) -> Tensor:
    """[C] sum over each choice's tokens of log p(token | prompt, earlier choice tokens) (option
    log-likelihood, as lm-evaluation-harness scores multiple choice). The prompt and the choice are
    tokenised apart (the choice with a leading space unless it has one) so every choice shares the prompt's
    tokens; the choices of an item run as one right-padded batch. Returns float64: each token's
    log-probability is float32, their sum is accumulated in float64 so a near tie between two long choices
    is not decided by float32 rounding."""
    prompt = tokenizer(item.prompt)["input_ids"]
    assert len(prompt) >= 1, f"prompt {item.prompt!r} has no token"
    conts = [
        tokenizer(c if c[:1].isspace() else " " + c, add_special_tokens=False)["input_ids"]
        for c in item.choices
    ]
    rows = [prompt + c for c in conts]
    T = max(len(r) for r in rows)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    ids = torch.tensor([r + [pad] * (T - len(r)) for r in rows], device=device)  # [C, T]
    mask = torch.tensor([[1] * len(r) + [0] * (T - len(r)) for r in rows], device=device)  # [C, T]
    with torch.no_grad():
        logp = torch.log_softmax(
            model(input_ids=ids, attention_mask=mask).logits.float(), dim=-1
        )  # [C, T, V]
    out = []
    for c, cont in enumerate(conts):
        start = len(prompt)  # position of the choice's first token; predicted at start - 1
        positions = torch.arange(start - 1, start - 1 + len(cont), device=device)  # [n]
        targets = torch.tensor(cont, device=device)  # [n]
        out.append(logp[c, positions, targets].double().sum())
    return torch.stack(out)


def choices_made(
    model: nn.Module, tokenizer: PreTrainedTokenizerBase, items: Sequence[ChoiceItem], device: str = "cpu"
) -> list[int]:
    """Per item, the option of highest log-likelihood (ties: the first)."""
    return [int(choice_log_likelihoods(model, tokenizer, item, device).argmax()) for item in items]


def choice_accuracy(
    model: nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    items: Sequence[ChoiceItem],
    device: str = "cpu",
    chosen: list[int] | None = None,
) -> float:
    """Fraction of items whose highest option log-likelihood is the answer (ties: the first choice).
    ``chosen``, when given, receives each item's choice (the per-example table)."""
    made = choices_made(model, tokenizer, items, device)
    if chosen is not None:
        chosen.extend(made)
    return sum(int(c == item.answer) for c, item in zip(made, items, strict=True)) / len(items)
