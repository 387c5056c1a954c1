"""Tasks and data: single-token answers per tokenizer, prompts per family, the 80/10/10 split with seed
42, JSONL/CSV/HF loaders, WordNet IDM examples."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from tests.worker.core.carma.tiny import tiny
from worker.core.carma.batches import EpochStream, collate
from worker.core.carma.datasets import (
    clean_definition,
    idm_examples_from_synsets,
    load_csv,
    load_hf,
    load_jsonl,
)
from worker.core.carma.tasks import Example, encode, label_token, prompt_template, sentiment_label, split


def test_prompts_per_family_and_custom() -> None:
    assert prompt_template("idm", "gpt2") == '{text} is called a "'
    assert prompt_template("sc", "qwen2") == 'The sentiment of {text} is "'
    assert prompt_template("sc", "gemma") == 'The sentiment of {text} is "'  # default where none is known
    assert prompt_template("idm", "llama", "Define: {text} -> ") == "Define: {text} -> "
    with pytest.raises(AssertionError, match="exactly once"):
        prompt_template("idm", "llama", "no placeholder")


def test_only_single_token_answers_are_kept_per_tokenizer() -> None:
    lm = tiny("tiny-gpt2")
    examples = [Example("a large body of salt water", "sea"), Example("the shore of a sea", "coast")]
    assert label_token(lm.tokenizer, "sea") is not None
    assert label_token(lm.tokenizer, "coast") is None  # GPT-2: "co" + "ast" after the quote
    items, dropped = encode(examples, lm.tokenizer, prompt_template("idm", "gpt2"), 64)
    assert [i.example.label for i in items] == ["sea"] and dropped == {"multi_token_label": 1, "too_long": 0}
    item = items[0]
    assert lm.tokenizer.decode(item.input_ids) == 'a large body of salt water is called a "'
    assert len(item.word_ids) == len(item.input_ids)
    _, dropped = encode(examples[:1], lm.tokenizer, prompt_template("idm", "gpt2"), 4)
    assert dropped["too_long"] == 1


def test_split_is_80_10_10_and_seeded() -> None:
    lm = tiny("tiny-gpt2")
    examples = [Example(f"definition number {i}", "dog") for i in range(50)]
    items, _ = encode(examples, lm.tokenizer, prompt_template("idm", "gpt2"), 64)
    a, b = split(items, seed=42), split(items, seed=42)
    assert (len(a.train), len(a.validation), len(a.test)) == (40, 5, 5)
    assert a == b and split(items, seed=7).train != a.train
    assert not {id(x) for x in a.train} & {id(x) for x in a.test}
    assert len(split(items, seed=42, limit=20).train) == 16


def test_epoch_stream_resumes_exactly() -> None:
    lm = tiny("tiny-gpt2")
    items, _ = encode([Example(f"text {i}", "dog") for i in range(10)], lm.tokenizer, '{text} is "', 64)
    stream = EpochStream(items, 4, 0, seed=3)
    seen = [stream.next_batch() for _ in range(4)]  # 3 batches per epoch: crosses into epoch 2
    state = stream.state_dict()
    after = [stream.next_batch().input_ids for _ in range(3)]
    again = EpochStream(items, 4, 0, seed=3)
    again.load_state_dict(state)
    assert all((x == again.next_batch().input_ids).all() for x in after)
    assert [len(b) for b in seen] == [4, 4, 2, 4] and len(collate(items[:3], 0)) == 3


def test_sentiment_thresholds_and_file_loaders(tmp_path: Path) -> None:
    assert [sentiment_label(s) for s in (0.9, 0.6, 0.5, 0.4, 0.1)] == [
        "positive", "neutral", "neutral", "neutral", "negative",
    ]  # fmt: skip
    assert sentiment_label(0.6, positive_above=0.5) == "positive"
    jsonl = tmp_path / "sst.jsonl"
    jsonl.write_text(
        json.dumps({"sentence": "a gem", "score": 0.9})
        + "\n"
        + json.dumps({"sentence": "dull", "score": 0.1})
        + "\n"
    )
    assert load_jsonl(jsonl, "sentence", "score") == [
        Example("a gem", "positive"),
        Example("dull", "negative"),
    ]
    csv = tmp_path / "idm.csv"
    csv.write_text("definition,word\nthe shore of a sea,coast\n")
    assert load_csv(csv, "definition", "word") == [Example("the shore of a sea", "coast")]
    with pytest.raises(ValueError, match="needs the fields"):
        load_csv(csv, "text", "label")


def test_hf_loader_keeps_the_datasets_own_splits(monkeypatch: pytest.MonkeyPatch) -> None:
    """No network: a stand-in ``datasets`` module with SST's layout (sentence, float label)."""
    rows = {
        "train": [{"sentence": "great", "label": 0.95}],
        "validation": [{"sentence": "fine", "label": 0.5}],
        "test": [{"sentence": "awful", "label": 0.05}],
    }
    fake = types.ModuleType("datasets")
    fake.load_dataset = lambda name, config=None: rows  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "datasets", fake)
    train, val, test = load_hf("stanfordnlp/sst", None, ["train", "validation", "test"], "sentence", "label")
    assert (train, val, test) == (
        [Example("great", "positive")],
        [Example("fine", "neutral")],
        [Example("awful", "negative")],
    )


class _Synset:
    def __init__(self, lemmas: list[str], definition: str) -> None:
        self._lemmas, self._definition = lemmas, definition

    def lemma_names(self) -> list[str]:
        return self._lemmas

    def definition(self) -> str:
        return self._definition


def test_idm_examples_are_cleaned_definitions_of_plain_words() -> None:
    synsets = [
        _Synset(["sea_coast", "coast"], "the shore of a sea (or ocean);  land"),
        _Synset(["Paris"], "the capital of France"),
        _Synset(["dog"], "a dog-like dog"),  # the answer is in the question
    ]
    assert idm_examples_from_synsets(synsets) == [Example("the shore of a sea land", "coast")]
    assert clean_definition("a 'tricky'  one, (really)!") == "a 'tricky' one"


def test_wordnet_idm_from_the_offline_wordnet() -> None:
    from worker.core.carma.datasets import wordnet_idm

    examples = wordnet_idm(("n",))
    assert len(examples) > 40_000
    assert Example("the shore of a sea or ocean", "seashore") in examples or any(
        e.label == "coast" for e in examples
    )
