"""A scripted grader that runs no model: it reads a prompt of ``rubric.grading_prompt`` and answers a
rubric table from surface features of the text. It makes the CPU demo and the tests run the whole
pipeline (prompt, table, parser, vote, metrics) in seconds; its points are a pipeline check, not a
judgment of the skills (docs/experiments/skillmix.md).

Rules: a skill point when the text shares a content word (5+ letters, compared on its first 5) with the
skill's example; the topic point when it shares one with the topic; the sense point for 4+ words of which
at least half are distinct; the sentence point from the sentence counter."""

from __future__ import annotations

import re
from collections.abc import Sequence

from worker.core.skillmix.chat import Conversation, Reply, Sampling
from worker.core.skillmix.rubric import read_grading_prompt
from worker.core.skillmix.sentences import count_sentences

_WORDS = re.compile(r"[a-z]+")
_DEFINITION = re.compile(r"^- (.+?): .*?For example: (.*)$", re.MULTILINE)
_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}


def _stems(text: str, min_len: int = 5) -> set[str]:
    return {w[:5] for w in _WORDS.findall(text.lower()) if len(w) >= min_len}


def _limit(label: str) -> int:
    match = re.search(r"at most (\w+)", label.lower())
    word = match.group(1) if match else "1"
    return int(word) if word.isdigit() else _NUMBERS.get(word, 1)


def rule_points(prompt: str) -> list[tuple[str, int]]:
    """(criterion label, point) for every criterion of a grading prompt."""
    text, labels = read_grading_prompt(prompt)
    examples = {name.strip().lower(): example for name, example in _DEFINITION.findall(prompt)}
    words = _WORDS.findall(text.lower())
    stems = _stems(text)
    out: list[tuple[str, int]] = []
    for label in labels:
        lower = label.lower()
        if lower.startswith("illustrates "):
            example = examples.get(lower.removeprefix("illustrates ").strip(), "")
            point = int(bool(stems & _stems(example)))
        elif lower.startswith("pertains to "):
            point = int(bool(stems & _stems(lower.removeprefix("pertains to "), min_len=4)))
        elif "sense" in lower:
            point = int(len(words) >= 4 and len(set(words)) >= len(words) / 2)
        else:
            point = int(0 < count_sentences(text) <= _limit(label))
        out.append((label, point))
    return out


def rule_table(prompt: str) -> str:
    rows = rule_points(prompt)
    lines = ["Here is the grading table:", "", "| Criterion | Points |", "|---|---|"]
    lines += [f"| {label} | {point} |" for label, point in rows]
    lines += [f"| Total | {sum(p for _, p in rows)} |", "", "Explanation: scored by surface rules."]
    return "\n".join(lines)


class RuleGrader:
    identity = "rules:v1"

    def complete(
        self, conversations: Sequence[Conversation], seeds: Sequence[int], sampling: Sampling
    ) -> list[Reply]:
        return [rule_table(c[-1]["content"]) for c in conversations]
