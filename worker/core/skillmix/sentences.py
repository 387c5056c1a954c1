"""The regex sentence counter whose verdict overrides the grader's sentence-limit point (REFERENCE.md,
"Skill-Mix": graders miscount sentences, so the reference recounts them)."""

from __future__ import annotations

import re

# abbreviations whose period ends no sentence
_ABBREVIATIONS = re.compile(
    r"\b(?:Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|vs|etc|e\.g|i\.e|cf|approx|no|fig)\.", re.IGNORECASE
)
_DECIMAL = re.compile(r"(?<=\d)\.(?=\d)")
# a sentence ends at ., ! or ? (repeated, maybe followed by closing quotes or brackets) before
# whitespace or the end of the text
_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s|$)")


def count_sentences(text: str) -> int:
    """Sentences in ``text``: pieces between sentence-ending punctuation that hold a word character.
    A text without final punctuation still counts its last piece; an empty text counts 0."""
    masked = _DECIMAL.sub("_", _ABBREVIATIONS.sub(lambda m: m.group(0).replace(".", "_"), text))
    pieces = _END.split(masked)
    return sum(1 for piece in pieces if re.search(r"\w", piece))
