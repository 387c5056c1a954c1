"""The encoded train/validation/test splits of a spec's data, for one tokenizer and prompt."""

from __future__ import annotations

from worker.core.carma.datasets import check_sentiment_labels, load_csv, load_hf, load_jsonl, wordnet_idm
from worker.core.carma.tasks import Encoded, Example, Splits, encode, split
from worker.core.models import LoadedModel
from worker.runtime import confined
from worker.specs.carma.carma import CarmaSpec
from worker.tracking.context import RunError


def load_examples(spec: CarmaSpec) -> list[list[Example]]:
    """All examples as one list (to be split 80/10/10), or the dataset's own three splits (``hf``)."""
    d = spec.data
    if d.source == "wordnet":
        return [wordnet_idm(d.wordnet_pos)]
    if d.source == "hf":
        return load_hf(
            confined.hub_dataset(d.hf_name, "data.hf_name"),
            d.hf_config,
            d.hf_splits,
            d.text_field,
            d.label_field,
            d.positive_above,
            d.negative_below,
        )
    if d.path is None:  # the spec refuses this; a hand-built one is told the same
        raise RunError(f"data.path: the {d.source} source needs a file")
    loader = load_jsonl if d.source == "jsonl" else load_csv
    path = confined.data_file(d.path, "data.path")
    return [loader(path, d.text_field, d.label_field, d.positive_above, d.negative_below)]


def prepare_data(spec: CarmaSpec, lm: LoadedModel, template: str) -> tuple[Splits, dict[str, int]]:
    """Encoded train/validation/test splits for this tokenizer, and counts of what was dropped."""
    parts = load_examples(spec)
    if spec.data.task == "sc":
        for part in parts:
            check_sentiment_labels(part)
    dropped: dict[str, int] = {}
    encoded: list[list[Encoded]] = []
    for part in parts:
        kept, lost = encode(part, lm.tokenizer, template, spec.data.max_length)
        encoded.append(kept)
        for key, n in lost.items():
            dropped[key] = dropped.get(key, 0) + n
    if len(encoded) == 1:
        splits = split(encoded[0], spec.data.split_seed, spec.data.max_examples)
    else:
        limit = spec.data.max_examples
        splits = Splits(*(part[:limit] if limit else part for part in encoded))
    if not splits.train or not splits.validation or not splits.test:
        raise RunError(
            f"too few examples with a single-token answer for {spec.model.name}: train {len(splits.train)}, "
            f"validation {len(splits.validation)}, test {len(splits.test)} (dropped: {dropped})"
        )
    return splits, dropped
