"""Data building both kinds share: the synthetic suite a spec describes and the collate of the batches."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from worker.core.reasonformer.data.batching import Seq2SeqBatch, collate
from worker.core.reasonformer.data.example import Example
from worker.core.reasonformer.data.synthetic import SkillSuite, SuiteConfig
from worker.core.reasonformer.data.tokenizer import TextTokenizer
from worker.specs.suite import SuiteSpec


def suite_of(spec: SuiteSpec) -> SkillSuite:
    return SkillSuite(
        SuiteConfig(
            min_len=spec.min_len,
            max_len=spec.max_len,
            heldout_fraction=spec.heldout_fraction,
            split_seed=spec.split_seed,
            primitive_fraction=spec.primitive_fraction,
        )
    )


def batch_maker(
    tokenizer: TextTokenizer, skills: Sequence[str], depth: int, max_source: int, max_target: int
) -> Callable[[list[Example]], Seq2SeqBatch]:
    def make(examples: list[Example]) -> Seq2SeqBatch:
        return collate(
            examples, tokenizer, skills=skills, depth=depth, max_source=max_source, max_target=max_target
        )

    return make
