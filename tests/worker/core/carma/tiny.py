"""Tiny models of the paper's families and small batches of real prompts, for the core tests."""

from __future__ import annotations

import functools

from worker.core.carma.batches import Batch, collate
from worker.core.carma.tasks import Example, encode, prompt_template
from worker.core.models import LoadedModel, load_model

EXAMPLES = [
    Example("the shore of a sea or ocean", "coast"),
    Example("a domesticated carnivorous mammal kept as a pet", "dog"),
    Example("unbelievably antidisestablishmentarian photosynthesis", "plant"),
    Example("a building where people live", "house"),
]


@functools.cache
def tiny(name: str) -> LoadedModel:
    lm = load_model(name, seed=0)
    lm.model.eval()
    return lm


def tiny_batch(lm: LoadedModel, examples: list[Example] = EXAMPLES) -> Batch:
    items, _ = encode(examples, lm.tokenizer, prompt_template("idm", lm.model_type), 64)
    assert len(items) >= 2, "the tiny examples need single-token answers"
    return collate(items, int(lm.tokenizer.pad_token_id))
