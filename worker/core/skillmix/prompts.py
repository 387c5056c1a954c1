"""The two-turn generation prompt (REFERENCE.md, "Skill-Mix"; paper 004 section 2.2 uses Skill-Mix's
generation prompt): turn 1 asks for a short natural text on the topic illustrating all k skills, given
their definitions and examples, as an answer followed by an explanation; turn 2 asks to shorten it to at
most max(1, k-1) sentences. The graded text is the answer of the last turn. Our own wording."""

from __future__ import annotations

import re
from collections.abc import Sequence

from worker.core.skillmix.combinations import Combination
from worker.core.skillmix.skills import Skill

_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def sentence_limit(k: int) -> int:
    """At most max(1, k-1) sentences: paper 004 A.3.1 says k-1, impossible at k=1 (REFERENCE.md)."""
    return max(1, k - 1)


def count_words(n: int, noun: str) -> str:
    """``count_words(1, "sentence")`` -> "one sentence"; ``(3, "skill")`` -> "three skills"."""
    number = _NUMBER_WORDS[n] if 0 <= n < len(_NUMBER_WORDS) else str(n)
    return f"{number} {noun}{'' if n == 1 else 's'}"


def describe_skills(skills: Sequence[Skill]) -> str:
    return "\n".join(f"- {s.name}: {s.definition} For example: {s.example}" for s in skills)


def first_turn(c: Combination) -> str:
    names = ", ".join(c.skill_names)
    return (
        f"Write a short piece of text about {c.topic} that illustrates all of the following "
        f"{count_words(c.k, 'skill')}: {names}. It should read naturally and be as brief as possible: "
        "one piece of text, not a list.\n\n"
        f"What each skill means:\n{describe_skills(c.skills)}\n\n"
        "Reply in this format:\nAnswer: <your text>\nExplanation: <how the text illustrates each skill>"
    )


def second_turn(c: Combination) -> str:
    limit = count_words(sentence_limit(c.k), "sentence")
    return (
        f"Now revise your text so that it has at most {limit}, still illustrates every skill and still "
        f"is about {c.topic}. Reply in the same format:\nAnswer: <your text>\nExplanation: <how>"
    )


_ANSWER = re.compile(r"\banswer\s*:", re.IGNORECASE)
_EXPLANATION = re.compile(r"\bexplanation\b\s*:?", re.IGNORECASE)


def extract_answer(reply: str) -> str:
    """The text a reply gives as its answer: after the last ``Answer:``, before ``Explanation``
    (the whole reply when it has no ``Answer:``), with surrounding quotes and markup stripped."""
    starts = list(_ANSWER.finditer(reply))
    text = reply[starts[-1].end() :] if starts else reply
    end = _EXPLANATION.search(text)
    if end is not None:
        text = text[: end.start()]
    return text.strip().strip("*").strip().strip("\"'“”").strip()
