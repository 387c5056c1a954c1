"""Where synonyms come from, pluggable: WordNet through nltk (the reference: up to 5 lemmas of the word's
synsets that differ from it) or a user's JSON map ``{"word": ["synonym", ...]}``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol


class SynonymSource(Protocol):
    name: str

    def synonyms(self, word: str) -> list[str]:
        """Candidates for ``word`` (lower-case), different from it; may be empty."""
        ...


class WordNetSource:
    """Up to ``limit`` distinct lemma names of the word's WordNet synsets, in WordNet's order, other than
    the word itself; multi-word lemmas with spaces (REFERENCE.md, synonym replacement)."""

    name = "wordnet"

    def __init__(self, limit: int = 5) -> None:
        from worker.core.data.wordnet import wordnet

        self.wn, self.limit = wordnet(), limit

    def synonyms(self, word: str) -> list[str]:
        out: list[str] = []
        for synset in self.wn.synsets(word):
            for lemma in synset.lemma_names():
                candidate = lemma.replace("_", " ")
                if candidate.lower() != word and candidate not in out:
                    out.append(candidate)
                if len(out) == self.limit:
                    return out
        return out


class JsonMapSource:
    """A user's map from words to their synonyms, keys matched in lower case."""

    name = "json"

    def __init__(self, mapping: dict[str, list[str]]) -> None:
        self.mapping = {k.lower(): [s for s in v if s.lower() != k.lower()] for k, v in mapping.items()}

    @classmethod
    def from_file(cls, path: str | Path) -> JsonMapSource:
        data = json.loads(Path(path).read_text())
        if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(s, str) for s in v)
            for k, v in data.items()
        ):
            raise ValueError(f"{path}: a synonym map is a JSON object of word -> list of strings")
        return cls(data)

    def synonyms(self, word: str) -> list[str]:
        return list(self.mapping.get(word, []))


def make_source(name: str, path: str | None = None) -> SynonymSource:
    """The source named in a spec: ``wordnet`` or ``json`` (with the map's path)."""
    if name == "wordnet":
        return WordNetSource()
    if name == "json":
        assert path, "the json synonym source needs a path"
        return JsonMapSource.from_file(path)
    raise ValueError(f"unknown synonym source {name!r}; known: wordnet, json")
