"""The synonym intervention on a model (paper 003, section 5.2; appendix C.2): for each rate and seed,
replace words of the originally-correct test items' inputs, re-render the prompt, predict again, and
report ConsistSyn per seed, its mean, std and CV (appendix B.4)."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn
from transformers import PreTrainedTokenizerBase

from worker.core.carma.evaluate import evaluate
from worker.core.carma.spans import word_ids_from_offsets
from worker.core.carma.tasks import Encoded, Example, render
from worker.core.synonyms.metrics import coefficient_of_variation, consist_syn, mean_std
from worker.core.synonyms.replace import replace_synonyms
from worker.core.synonyms.sources import SynonymSource


@dataclass
class SynonymOutcome:
    rate: float
    seeds: list[int]
    consist_syn: list[float]  # per seed, percent
    mean: float
    std: float
    cv: float
    correct_before: int  # originally-correct items the replacement was applied to
    changed: list[int]  # per seed, how many of them had at least one word replaced
    items: list[SynonymItem] = field(default_factory=list)  # per seed and originally-correct item


@dataclass
class SynonymItem:
    """One originally-correct item under one seed's replacement (the per-example table)."""

    seed: int
    index: int  # the item's place in ``items``
    text: str  # the input after replacement
    replaced: tuple[tuple[str, str], ...]  # (word, synonym)
    prediction: int  # the argmax token id after replacement
    correct: bool


def reencode(
    items: Sequence[Encoded], texts: Sequence[str], tokenizer: PreTrainedTokenizerBase, template: str
) -> list[Encoded]:
    """The items with new input texts, same answers (the answer token never changes)."""
    prompts = [render(template, t) for t in texts]
    enc = tokenizer(prompts, return_offsets_mapping=True, return_special_tokens_mask=True)
    out = []
    for k, item in enumerate(items):
        special = [bool(s) for s in enc["special_tokens_mask"][k]]
        word_ids = word_ids_from_offsets(prompts[k], enc["offset_mapping"][k], special)
        out.append(
            Encoded(Example(texts[k], item.example.label), list(enc["input_ids"][k]), word_ids, item.label_id)
        )
    return out


def item_rng(seed: int, text: str) -> random.Random:
    """The replacement's random draws for one test item and seed, keyed by the item's identity (its input
    text), never by its position among the originally-correct items: FT and CARMA are correct on different
    items, and NI (appendix B.4) compares their ConsistSyn, so each variant must see the same perturbation
    of the same item for the same seed. A digest, not ``hash()``: Python salts string hashes per process."""
    digest = hashlib.sha256(f"{seed}\x00{text}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def synonym_intervention(
    model: nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    template: str,
    items: Sequence[Encoded],
    correct_before: Sequence[bool],
    source: SynonymSource,
    rates: Sequence[float],
    seeds: Sequence[int],
    stopwords: Collection[str],
    batch_size: int,
    device: torch.device | str = "cpu",
) -> list[SynonymOutcome]:
    """One outcome per rate over ``seeds``; ``correct_before`` is the clean evaluation of ``items``."""
    assert len(items) == len(correct_before), f"{len(items)} items, {len(correct_before)} flags"
    kept_at = [i for i, ok in enumerate(correct_before) if ok]
    kept = [items[i] for i in kept_at]
    pad_id = tokenizer.pad_token_id
    assert pad_id is not None, "the tokenizer needs a pad token"
    outcomes = []
    for rate in rates:
        values, changed, per_item = [], [], []
        for seed in seeds:
            texts, n_changed, replacements = [], 0, []
            for item in kept:
                rng = item_rng(seed, item.example.text)
                replacement = replace_synonyms(item.example.text, source, rate, rng, stopwords)
                texts.append(replacement.text)
                replacements.append(replacement)
                n_changed += bool(replacement.replaced)
            if kept:
                result = evaluate(
                    model, reencode(kept, texts, tokenizer, template), batch_size, pad_id, device
                )
                after, predicted = result.correct, result.predictions
            else:
                after, predicted = [], []
            values.append(consist_syn([True] * len(kept), after))
            changed.append(n_changed)
            per_item += [
                SynonymItem(seed, i, r.text, r.replaced, p, ok)
                for i, r, p, ok in zip(kept_at, replacements, predicted, after, strict=True)
            ]
        mean, std = mean_std(values)
        outcomes.append(
            SynonymOutcome(
                rate,
                list(seeds),
                values,
                mean,
                std,
                coefficient_of_variation(values),
                len(kept),
                changed,
                per_item,
            )
        )
    return outcomes
