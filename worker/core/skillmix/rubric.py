"""The grading rubric (paper 004 A.3.1, after Skill-Mix): k + 3 one-point criteria, one per skill, then
topic, sense and sentence limit, and the prompt asking a grader for them as a table. Our own wording; the
prompt is machine-readable on purpose (numbered criteria, the text between ``<<<`` and ``>>>``) so a
scripted grader can read it too."""

from __future__ import annotations

import re
from dataclasses import dataclass

from worker.core.skillmix.combinations import Combination
from worker.core.skillmix.prompts import count_words, describe_skills, sentence_limit

TEXT_OPEN, TEXT_CLOSE = "<<<", ">>>"


@dataclass(frozen=True)
class Criterion:
    label: str
    kind: str  # skill | topic | sense | sentences
    skill: str | None = None


def criteria(c: Combination) -> list[Criterion]:
    """The k + 3 criteria in the order of a points vector: the skills, topic, sense, sentence limit."""
    limit = count_words(sentence_limit(c.k), "sentence")
    return [
        *(Criterion(f"Illustrates {name}", "skill", name) for name in c.skill_names),
        Criterion(f"Pertains to {c.topic}", "topic"),
        Criterion("Makes sense", "sense"),
        Criterion(f"At most {limit}", "sentences"),
    ]


def grading_prompt(c: Combination, text: str) -> str:
    items = "\n".join(f"{i}. {crit.label}" for i, crit in enumerate(criteria(c), start=1))
    limit = count_words(sentence_limit(c.k), "sentence")
    return (
        "Please grade a short text written by a student.\n\n"
        f"The student was asked: write a text of at most {limit} about {c.topic} that illustrates all "
        f"of these skills: {', '.join(c.skill_names)}.\n\n"
        f"Definitions of the skills:\n{describe_skills(c.skills)}\n\n"
        f"The student's text:\n{TEXT_OPEN}\n{text}\n{TEXT_CLOSE}\n\n"
        "Grade it with this rubric; each criterion earns 1 point if met and 0 if not:\n"
        f"{items}\n\n"
        "Answer with a table with the columns 'Criterion' and 'Points', one row per criterion in the "
        "order above and a last row 'Total', then a short explanation starting with 'Explanation:'."
    )


_ITEM = re.compile(r"^\s*(\d+)\.\s+(.+?)\s*$", re.MULTILINE)


def read_grading_prompt(prompt: str) -> tuple[str, list[str]]:
    """(student text, criterion labels) of a prompt made by :func:`grading_prompt`, for scripted graders."""
    start, end = prompt.index(TEXT_OPEN) + len(TEXT_OPEN), prompt.rindex(TEXT_CLOSE)
    text = prompt[start:end].strip("\n")
    rubric = prompt[end:]
    return text, [m.group(2) for m in _ITEM.finditer(rubric)]
