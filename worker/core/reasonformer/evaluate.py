"""Evaluating a model on examples (paper 001, section 4.1): accuracy for multiple choice (the option of
highest log-likelihood, summed and length-normalised), exact match for generative tasks; and the
reasoning trace (router distributions and stop gates) of every example for the routing analysis."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from transformers.modeling_outputs import BaseModelOutput

from worker.core.reasonformer.data.batching import chunks, collate, pad
from worker.core.reasonformer.data.example import Example
from worker.core.reasonformer.data.tokenizer import TextTokenizer
from worker.core.reasonformer.model import ReasonFormerEncoderOutput
from worker.core.reasonformer.routing import skill_probs
from worker.core.reasonformer.scoring import choose, exact_match, sequence_log_likelihood


@dataclass
class Predictions:
    """Per example: its prediction (text), whether it is right, and its routing (ReasonFormer only)."""

    examples: list[Example]
    predictions: list[str] = field(default_factory=list)
    correct: list[bool] = field(default_factory=list)
    correct_norm: list[bool] = field(default_factory=list)  # length-normalised choice (choice tasks)
    probs: list[Tensor] = field(default_factory=list)  # [S, n] per example
    stop_gates: list[Tensor | None] = field(default_factory=list)  # [S] per example


def _encode(model: Any, input_ids: Tensor, attention_mask: Tensor) -> BaseModelOutput:
    return model.get_encoder()(input_ids=input_ids, attention_mask=attention_mask)


def _record_trace(pred: Predictions, enc: BaseModelOutput, count: int) -> None:
    if isinstance(enc, ReasonFormerEncoderOutput) and enc.router_logits is not None:
        probs = skill_probs(enc.router_logits).float().cpu()  # [B, S, n]
        gates = enc.stop_gates.float().cpu() if enc.stop_gates is not None else None  # [B, S]
        for b in range(count):
            pred.probs.append(probs[b])
            pred.stop_gates.append(gates[b] if gates is not None else None)


@torch.no_grad()
def choice_log_likelihoods(
    model: nn.Module, input_ids: Tensor, attention_mask: Tensor, options: Sequence[Sequence[list[int]]]
) -> tuple[Tensor, Tensor, Tensor, BaseModelOutput]:
    """Log-likelihood of every option of every instance, the encoder run once per instance.

    options[b][c]: token ids of option c of instance b. Returns (sum [B, C], count [B, C], option_mask
    [B, C], the encoder output).
    """
    B = input_ids.shape[0]
    enc = _encode(model, input_ids, attention_mask)
    owner = torch.tensor([b for b in range(B) for _ in options[b]], device=input_ids.device)  # [N]
    labels = pad([o for opts in options for o in opts], -100).to(input_ids.device)  # [N, T_o]
    assert enc.last_hidden_state is not None
    hidden = enc.last_hidden_state.index_select(0, owner)  # [N, T, d]: one copy per option
    logits = model(
        encoder_outputs=BaseModelOutput(last_hidden_state=hidden),
        attention_mask=attention_mask.index_select(0, owner),
        labels=labels,
    ).logits  # [N, T_o, V]
    ll, count = sequence_log_likelihood(logits, labels)  # [N], [N]
    C = max(len(o) for o in options)
    sums = ll.new_zeros(B, C)
    counts = count.new_zeros(B, C)
    option_mask = torch.zeros(B, C, dtype=torch.bool, device=ll.device)
    slot = torch.tensor([c for opts in options for c in range(len(opts))], device=ll.device)
    sums[owner, slot] = ll
    counts[owner, slot] = count
    option_mask[owner, slot] = True
    return sums, counts, option_mask, enc


@torch.no_grad()
def predict(
    model: Any,
    examples: Sequence[Example],
    tokenizer: TextTokenizer,
    *,
    batch_size: int = 32,
    max_source: int = 512,
    max_new_tokens: int = 32,
    device: torch.device | str = "cpu",
) -> Predictions:
    """Predictions of every example: choice by option log-likelihood, generation by greedy decoding."""
    model.eval()
    out = Predictions(examples=[])
    choice = [e for e in examples if e.is_choice]
    generative = [e for e in examples if not e.is_choice]
    for group in chunks(choice, batch_size):
        batch = collate(group, tokenizer, max_source=max_source).to(torch.device(device))
        options = [[tokenizer.encode(o) for o in e.options] for e in group]
        sums, counts, option_mask, enc = choice_log_likelihoods(
            model, batch.input_ids, batch.attention_mask, options
        )
        by_sum, by_mean = choose(sums, counts, option_mask)
        for e, s, m in zip(group, by_sum.tolist(), by_mean.tolist()):
            out.examples.append(e)
            out.predictions.append(e.options[s])
            out.correct.append(s == e.answer)
            out.correct_norm.append(m == e.answer)
        _record_trace(out, enc, len(group))
    for group in chunks(generative, batch_size):
        batch = collate(group, tokenizer, max_source=max_source).to(torch.device(device))
        enc = _encode(model, batch.input_ids, batch.attention_mask)
        generated = model.generate(
            encoder_outputs=enc,
            attention_mask=batch.attention_mask,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            num_beams=1,
            decoder_start_token_id=0,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
        for e, ids in zip(group, generated.tolist()):
            text = tokenizer.decode(ids[1:])  # drop the decoder start token
            out.examples.append(e)
            out.predictions.append(text)
            out.correct.append(exact_match(text, e.output))
            out.correct_norm.append(exact_match(text, e.output))
        _record_trace(out, enc, len(group))
    return out


@dataclass(frozen=True)
class TaskScore:
    task: str
    metric: str  # "accuracy" (choice) or "exact_match" (generative)
    value: float
    value_norm: float  # choice: accuracy by length-normalised log-likelihood; generative: = value
    count: int


def task_scores(pred: Predictions) -> list[TaskScore]:
    by_task: dict[str, list[int]] = {}
    for i, e in enumerate(pred.examples):
        by_task.setdefault(e.task, []).append(i)
    out = []
    for task in sorted(by_task):
        idx = by_task[task]
        metric = "accuracy" if pred.examples[idx[0]].is_choice else "exact_match"
        value = sum(pred.correct[i] for i in idx) / len(idx)
        value_norm = sum(pred.correct_norm[i] for i in idx) / len(idx)
        out.append(TaskScore(task, metric, value, value_norm, len(idx)))
    return out


EVAL_MAX_NEW_TOKENS = 16  # greedy decoding length of a generative task's evaluation, unless a spec says


def eval_rng(split_seed: int, stream: int) -> np.random.Generator:
    """Evaluation sets depend on the suite's split seed, not the run seed: every run of a sweep is scored
    on the same instances."""
    return np.random.default_rng([split_seed, stream, 0x5EED])


def predict_eval(
    model: nn.Module,
    examples: Sequence[Example],
    tokenizer: TextTokenizer,
    *,
    batch_size: int,
    max_source: int,
    max_new_tokens: int = EVAL_MAX_NEW_TOKENS,
    device: str,
) -> Predictions:
    """``predict`` without gradients, leaving the model in the train/eval mode it was in."""
    was_training = model.training
    try:
        with torch.no_grad():
            return predict(
                model,
                examples,
                tokenizer,
                batch_size=batch_size,
                max_source=max_source,
                max_new_tokens=max_new_tokens,
                device=device,
            )
    finally:
        model.train(was_training)


def eval_metrics(pred: Predictions) -> dict[str, float]:
    """``eval/<task>`` per task and ``eval/average``, their mean (0 with no task)."""
    scores = task_scores(pred)
    out = {f"eval/{s.task}": s.value for s in scores}
    out["eval/average"] = float(np.mean([s.value for s in scores])) if scores else 0.0
    return out
