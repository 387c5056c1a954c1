"""Where CARMA's examples come from: WordNet 3.0 (IDM, offline: ``worker.core.data.wordnet``), JSONL and
CSV files, and HuggingFace ``datasets`` (SST, for users whose machine reaches the hub; never in tests).
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from worker.core.carma.tasks import SENTIMENT_LABELS, Example, sentiment_label
from worker.core.data.offline import OutsideStore, cache_root

WORDNET_POS = ("n", "v", "a", "r")
_PARENS = re.compile(r"\([^)]*\)")
_NOT_TEXT = re.compile(r"[^A-Za-z0-9'\- ]+")
_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"^[a-z]+$")


def clean_definition(text: str) -> str:
    """Paper 003, B.2: "removal of special characters, punctuation, extra spaces, and parenthesised
    content". Apostrophes and hyphens inside words stay."""
    text = _PARENS.sub(" ", text)
    text = _NOT_TEXT.sub(" ", text)
    return _SPACES.sub(" ", text).strip()


def idm_examples_from_synsets(synsets: Iterable[Any]) -> list[Example]:
    """One example per synset: its cleaned definition -> its first lemma that is a plain lower-case word
    (general-purpose vocabulary, B.2; no multi-word, hyphenated or proper-noun lemmas). Synsets whose
    definition contains that word are left out: the answer would be in the question."""
    out: list[Example] = []
    for synset in synsets:
        word = next((name for name in synset.lemma_names() if _WORD.match(name)), None)
        if word is None:
            continue
        definition = clean_definition(synset.definition())
        if not definition or word in definition.lower().split():
            continue
        out.append(Example(definition, word))
    return out


def wordnet_idm(pos: Sequence[str] = ("n",)) -> list[Example]:
    """IDM examples from WordNet 3.0 for the given parts of speech, in WordNet's order. Reading all
    synsets takes tens of seconds, so the list is cached as JSONL under the cache root."""
    assert pos and all(p in WORDNET_POS for p in pos), f"parts of speech in {WORDNET_POS}, got {pos}"
    path = cache_root() / "datasets" / f"wordnet-3.0-idm-{''.join(sorted(pos))}.jsonl"
    if path.is_file():
        return load_jsonl(path, "text", "label")
    from worker.core.data.wordnet import wordnet

    wn = wordnet()
    examples = [e for p in sorted(pos) for e in idm_examples_from_synsets(wn.all_synsets(p))]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps({"text": e.text, "label": e.label}) + "\n" for e in examples))
    tmp.replace(path)
    return examples


def _label(value: Any, positive_above: float, negative_below: float) -> str:
    """A label field: a string as it is; a number is an SST score mapped by the thresholds."""
    if isinstance(value, bool):
        raise ValueError(f"a label is a string or an SST score, not {value!r}")
    if isinstance(value, int | float):
        return sentiment_label(float(value), positive_above, negative_below)
    text = str(value).strip()
    try:
        return sentiment_label(float(text), positive_above, negative_below)
    except ValueError:
        return text


def _rows_to_examples(
    rows: Iterable[dict[str, Any]],
    text_field: str,
    label_field: str,
    positive_above: float,
    negative_below: float,
    where: str,
) -> list[Example]:
    out: list[Example] = []
    for n, row in enumerate(rows, start=1):
        if text_field not in row or label_field not in row:
            raise ValueError(
                f"{where}, row {n}: needs the fields {text_field!r} and {label_field!r}: {row!r:.200}"
            )
        text = str(row[text_field]).strip()
        if text:
            out.append(Example(text, _label(row[label_field], positive_above, negative_below)))
    return out


def load_jsonl(
    path: str | Path,
    text_field: str = "text",
    label_field: str = "label",
    positive_above: float = 0.6,
    negative_below: float = 0.4,
) -> list[Example]:
    """One JSON object per line with a text and a label (a string, or an SST score in [0, 1])."""
    lines = Path(path).read_text().splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    return _rows_to_examples(rows, text_field, label_field, positive_above, negative_below, str(path))


def load_csv(
    path: str | Path,
    text_field: str = "text",
    label_field: str = "label",
    positive_above: float = 0.6,
    negative_below: float = 0.4,
) -> list[Example]:
    """A CSV file with a header row naming at least the text and label columns."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    return _rows_to_examples(rows, text_field, label_field, positive_above, negative_below, str(path))


def load_hf(
    name: str,
    config: str | None,
    splits: Sequence[str],
    text_field: str,
    label_field: str,
    positive_above: float = 0.6,
    negative_below: float = 0.4,
) -> list[list[Example]]:
    """Examples of each split of a HuggingFace dataset (``datasets.load_dataset``), e.g. SST with its own
    train/validation/test splits (paper 003, B.2: "the original dataset splits ... were maintained").
    Needs the ``datasets`` package and a machine that reaches the hub or has the dataset cached. A name
    that is a path of the working directory (``load_dataset`` would read it) is refused (``OutsideStore``)."""
    if os.path.lexists(name):
        raise OutsideStore(f"{name!r} names a local path of the worker, not a hub dataset")
    try:
        import datasets
    except ImportError as exc:
        raise ModuleNotFoundError(
            "data.source 'hf' needs the `datasets` package (pip install datasets) and access to the hub"
        ) from exc
    loaded = datasets.load_dataset(name, config) if config else datasets.load_dataset(name)
    return [
        _rows_to_examples(loaded[s], text_field, label_field, positive_above, negative_below, f"{name}[{s}]")
        for s in splits
    ]


def check_sentiment_labels(examples: Sequence[Example]) -> None:
    unknown = sorted({e.label for e in examples} - set(SENTIMENT_LABELS))
    if unknown:
        raise ValueError(f"sentiment labels must be {SENTIMENT_LABELS}, found {unknown[:5]}")
