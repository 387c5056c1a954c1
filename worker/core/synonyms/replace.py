"""Synonym replacement on the task input only (paper 003, section 4.3 and appendix C.2; REFERENCE.md):
the prompt template is rendered after replacement, so it is never touched.

Content words are the whitespace words of the input whose letters (punctuation stripped) are alphabetic,
at least two characters long and no stopword. They are shuffled; for each, one synonym is drawn at random
among the source's candidates and replaces every occurrence of the word; replacement stops after
max(1, int(n_words * rate)) words, n_words counting every word of the input.
"""

from __future__ import annotations

import random
import string
from collections.abc import Collection
from dataclasses import dataclass

from worker.core.synonyms.sources import SynonymSource

_PUNCT = string.punctuation + "“”‘’"


@dataclass(frozen=True)
class Replacement:
    text: str  # the input after replacement
    replaced: tuple[tuple[str, str], ...]  # (word, synonym) in the order they were replaced


def _core(token: str) -> tuple[str, str, str]:
    """(leading punctuation, the word, trailing punctuation) of a whitespace token."""
    core = token.strip(_PUNCT)
    if not core:
        return token, "", ""
    start = token.index(core)
    return token[:start], core, token[start + len(core) :]


def content_words(text: str, stopwords: Collection[str]) -> list[str]:
    """Distinct lower-case content words of ``text`` in order of first appearance."""
    seen: list[str] = []
    for token in text.split():
        word = _core(token)[1].lower()
        if len(word) >= 2 and word.isalpha() and word not in stopwords and word not in seen:
            seen.append(word)
    return seen


def replace_synonyms(
    text: str, source: SynonymSource, rate: float, rng: random.Random, stopwords: Collection[str]
) -> Replacement:
    """Replace up to max(1, int(n_words * rate)) content words of ``text`` by synonyms."""
    assert 0.0 < rate <= 1.0, f"rate must be in (0, 1], got {rate}"
    tokens = text.split()
    budget = max(1, int(len(tokens) * rate))
    candidates = content_words(text, stopwords)
    rng.shuffle(candidates)
    chosen: dict[str, str] = {}
    for word in candidates:
        if len(chosen) == budget:
            break
        options = source.synonyms(word)
        if options:
            chosen[word] = rng.choice(options)
    if not chosen:
        return Replacement(text, ())
    out = []
    for token in tokens:
        lead, core, trail = _core(token)
        synonym = chosen.get(core.lower())
        out.append(f"{lead}{synonym}{trail}" if synonym is not None else token)
    return Replacement(" ".join(out), tuple(chosen.items()))
