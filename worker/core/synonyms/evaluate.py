"""The synonym intervention on a model (paper 003, section 5.2; appendix C.2): for each rate and seed,
replace words of the originally-correct test items' inputs, re-render the prompt, predict again, and
report ConsistSyn per seed, its mean, std and CV (appendix B.4)."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass

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
    kept = [item for item, ok in zip(items, correct_before) if ok]
    pad_id = tokenizer.pad_token_id
    assert pad_id is not None, "the tokenizer needs a pad token"
    outcomes = []
    for rate in rates:
        values, changed = [], []
        for seed in seeds:
            texts, n_changed = [], 0
            for item in kept:
                rng = item_rng(seed, item.example.text)
                replacement = replace_synonyms(item.example.text, source, rate, rng, stopwords)
                texts.append(replacement.text)
                n_changed += bool(replacement.replaced)
            after = (
                evaluate(
                    model, reencode(kept, texts, tokenizer, template), batch_size, pad_id, device
                ).correct
                if kept
                else []
            )
            values.append(consist_syn([True] * len(kept), after))
            changed.append(n_changed)
        mean, std = mean_std(values)
        outcomes.append(
            SynonymOutcome(
                rate, list(seeds), values, mean, std, coefficient_of_variation(values), len(kept), changed
            )
        )
    return outcomes
