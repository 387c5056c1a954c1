"""A tolerant parser of graders' rubric tables. Graders answer in many shapes: markdown tables with or
without outer pipes, headers such as 'Criteria | Points Earned' or 'Criterion | Score', a row number
column, yes/no or ✓/✗ instead of 1/0, '1/1' or '1 point', a 'Total' row, text before and after; some
answer with 'criterion: 1' lines and no table. Rows are matched to the rubric's criteria by their
content (the skill's name, the topic, sense, sentences), or by position when the labels say nothing but
the row count is right."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from worker.core.skillmix.rubric import Criterion

_SEPARATOR = re.compile(r"^:?-{2,}:?$")
_HEADER_WORDS = ("criterion", "criteria", "point", "score", "earned", "grade", "mark", "rubric")
_VALUE_HEADER = re.compile(r"point|score|earned|grade|mark|award", re.IGNORECASE)
_YES = {"yes", "y", "true", "met", "pass", "passed", "✓", "✔", "✅", "correct"}
_NO = {"no", "n", "false", "not met", "unmet", "fail", "failed", "✗", "✘", "❌", "x", "incorrect"}
_NUMBER = re.compile(r"^([+-]?\d+(?:\.\d+)?)\s*(?:/\s*\d+(?:\.\d+)?)?\s*(?:points?|pts?\.?)?\b")
_LINE = re.compile(r"^\s*(?:[-*•]\s*|\d+[.)]\s*)?(.+?)\s*[:=–—-]\s*(.+?)\s*$")


@dataclass(frozen=True)
class ParsedGrade:
    """Points in the rubric's order (1/0), or None when no row of the reply matched a criterion."""

    points: list[int] | None
    rows: int  # data rows found (Total excluded)


def parse_value(cell: str) -> int | None:
    """1 or 0 from a points cell, None when the cell holds no verdict. A criterion is worth one point:
    a value of at least 1 earns it, anything less (0, 0.5) does not."""
    text = cell.strip().strip("*_`").strip().lower().rstrip(".")
    if not text:
        return None
    if text in _YES:
        return 1
    if text in _NO:
        return 0
    match = _NUMBER.match(text)
    if match is None:
        return None
    return 1 if float(match.group(1)) >= 1 else 0


def _cells(line: str) -> list[str]:
    if "|" in line:
        return [c.strip() for c in line.strip().strip("|").split("|")]
    if "\t" in line:
        return [c.strip() for c in line.strip().split("\t")]
    return []


def _rows(reply: str) -> list[tuple[str, int]]:
    """(label, point) of every table row of the reply (tables first; 'label: value' lines otherwise)."""
    rows: list[tuple[str, int]] = []
    value_column: int | None = None
    for line in reply.splitlines():
        cells = _cells(line)
        if len(cells) < 2 or all(_SEPARATOR.match(c.replace(" ", "")) or not c for c in cells):
            continue
        values = [parse_value(c) for c in cells[1:]]
        if all(v is None for v in values):
            if any(w in " ".join(cells).lower() for w in _HEADER_WORDS):
                heads = [i for i, c in enumerate(cells) if _VALUE_HEADER.search(c)]
                value_column = heads[-1] if heads else None
            continue
        label_at = 1 if re.fullmatch(r"\d+\.?", cells[0]) and len(cells) >= 3 else 0
        value = None
        if value_column is not None and value_column < len(cells) and value_column > label_at:
            value = parse_value(cells[value_column])
        if value is None:
            value = next((v for v in reversed(values[label_at:]) if v is not None), None)
        if value is not None:
            rows.append((cells[label_at], value))
    if not rows:
        for line in reply.split("Explanation")[0].splitlines():
            match = _LINE.match(line)
            if match is not None and (value := parse_value(match.group(2))) is not None:
                rows.append((match.group(1).strip("*_` "), value))
    return [(label, value) for label, value in rows if "total" not in label.lower()]


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _matches(label: str, crit: Criterion) -> int:
    """How well a row label names a criterion: 3 exact, 2 its skill/topic words, 1 its kind, 0 not."""
    lab = _normal(label)
    if lab == _normal(crit.label):
        return 3
    if crit.kind == "skill" and crit.skill is not None:
        name = _normal(crit.skill)
        short = _normal(crit.skill.split("(")[0])
        return 2 if name in lab or (short and short in lab) else 0
    if crit.kind == "topic":
        topic = _normal(crit.label.removeprefix("Pertains to "))
        return 2 if topic in lab else (1 if "topic" in lab or "pertain" in lab or "relevan" in lab else 0)
    if crit.kind == "sense":
        return 1 if "sense" in lab or "coheren" in lab else 0
    return 1 if "sentence" in lab or "length" in lab else 0


def _assign(labels: Sequence[str], rubric: Sequence[Criterion]) -> list[int | None]:
    """For each row, the index of the criterion it names best (a skill's longer name wins ties), or None."""
    out: list[int | None] = []
    for label in labels:
        scored = [(_matches(label, c), len(c.skill or ""), i) for i, c in enumerate(rubric)]
        best = max(scored)
        out.append(best[2] if best[0] > 0 else None)
    return out


def parse_grade(reply: str, rubric: Sequence[Criterion]) -> ParsedGrade:
    rows = _rows(reply)
    assigned = _assign([label for label, _ in rows], rubric)
    found = [i for i in assigned if i is not None]
    if len(rows) == len(rubric) and (len(set(found)) < len(rows)):
        assigned = list(range(len(rubric)))  # labels say nothing useful, the row count is right: by position
    if all(i is None for i in assigned):
        return ParsedGrade(points=None, rows=len(rows))
    points = [0] * len(rubric)
    for (_, value), index in zip(rows, assigned, strict=True):
        if index is not None:
            points[index] = value
    return ParsedGrade(points=points, rows=len(rows))
