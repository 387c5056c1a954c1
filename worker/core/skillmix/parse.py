"""A parser of graders' rubric replies that never awards a point the grader did not give (paper 004 A.3.1:
"we parse each of the criteria individually from the Grader model's output"; REFERENCE.md: malformed grades
count as zeros).

Graders answer in many shapes: markdown tables with or without outer pipes, tabs, headers such as
'Criteria | Points Earned | Points Possible' or 'Criterion | Score', a row-number column, yes/no or ✓/✗ for
1/0, '1/1' or '1 point', summary rows ('Total', 'Overall', 'Final score'), text before and after; some answer
with 'criterion: 1' lines or bullets and no table. The rules:

- Values: 1/0, decimals, yes/no, ✓/✗, 'N point(s)'; 'a/b' and 'a out of b' are the fraction a/b. A criterion
  is worth one point and is earned only by a full point (value >= 1): 1/2 = 0.5 earns nothing.
- The points column is the one whose header says points/score/earned/awarded; a column whose header says
  possible/max/out of/available is never read, not even as a fallback.
- Rows are matched to criteria by label: the skill's name (the longest name wins), the topic, sense,
  sentences, or the criterion's number ('Point 3', 'Criterion 3', '#3', a bare '3'). A criterion named by
  several rows takes the first (a duplicated row shifts nothing); rows naming none are ignored, and summary
  rows are dropped. Only when no row names any criterion are the rows read by position, and only when
  there are exactly as many as criteria.
- A criterion no row names scores 0 and the grading is partial (``ParsedGrade.missing``); a reply in which
  nothing names a criterion (and no position reading applies) is unparseable (``points`` None).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from worker.core.skillmix.rubric import Criterion

_SEPARATOR = re.compile(r"^:?-{2,}:?$")
_HEADER_WORDS = ("criterion", "criteria", "point", "score", "earned", "grade", "mark", "rubric", "award")
_VALUE_HEADER = re.compile(r"point|score|earned|grade|mark|award|given|result", re.IGNORECASE)
# a column of what could be earned, never of what was: 'Points possible', 'Max', 'Out of', 'Available'
_POSSIBLE_HEADER = re.compile(r"possible|\bmax|maximum|out of|available|worth|weight", re.IGNORECASE)
_SUMMARY = re.compile(r"\b(total|overall|final|sum|summary|aggregate|subtotal)\b", re.IGNORECASE)
_YES = {"yes", "y", "true", "met", "pass", "passed", "✓", "✔", "✅", "✔️", "correct"}
_NO = {"no", "n", "false", "not met", "unmet", "fail", "failed", "✗", "✘", "❌", "x", "incorrect"}
_NUM = r"[+-]?\d+(?:\.\d+)?"
# a number (or a/b, a out of b), maybe 'points', then the end or a comment: '1 (clear)', '0 - no simile'
_NUMBER = re.compile(
    rf"^({_NUM})\s*(?:(?:/|out\s+of|of)\s*({_NUM}))?\s*(?:points?|pts?\.?)?(?=\s*(?:$|[(\[,;:–—-]))",
    re.IGNORECASE,
)
_COMMENT = re.compile(r"\s*[(\[,;:–—-].*$")
_BULLET = re.compile(r"^\s*(?:[-*•+]\s+|\d+[.)]\s+)")
_LINE_SPLIT = re.compile(r"\s*(?::|=|–|—|\s-\s)\s*")
_CRITERION_NUMBER = re.compile(
    r"^(?:(?:point|criterion|criteria|item|no\.?|number|#)\s*)?#?\s*(\d+)\s*[.):]?$", re.IGNORECASE
)


@dataclass(frozen=True)
class ParsedGrade:
    """Points in the rubric's order (1/0), or None when no row of the reply named a criterion."""

    points: list[int] | None
    rows: int  # data rows found (summary rows excluded)
    missing: tuple[
        int, ...
    ] = ()  # criteria (rubric positions) no row named: scored 0, the grading is partial

    @property
    def partial(self) -> bool:
        return self.points is not None and bool(self.missing)


def parse_number(cell: str) -> float | None:
    """The value a points cell states, 'a/b' and 'a out of b' as the fraction a/b; None for no number."""
    match = _NUMBER.match(cell)
    if match is None:
        return None
    value = float(match.group(1))
    if match.group(2) is not None:
        denominator = float(match.group(2))
        return value / denominator if denominator > 0 else None
    return value


def parse_value(cell: str) -> int | None:
    """1 or 0 from a points cell, None when the cell holds no verdict. A criterion is worth one point
    (paper 004 A.3.1): a value of at least 1 earns it, anything less (0, 0.5, 1/2) does not."""
    text = re.sub(r"[*`]", "", cell).strip().strip("_").strip().lower().rstrip(".")
    if not text:
        return None
    verdict = _COMMENT.sub("", text).strip().rstrip(".")  # 'yes (a clear simile)', 'no - off topic'
    if verdict in _YES:
        return 1
    if verdict in _NO:
        return 0
    value = parse_number(text)
    if value is None:
        return None
    return 1 if value >= 1 else 0


def _cells(line: str) -> list[str]:
    if "|" in line:
        return [c.strip() for c in line.strip().strip("|").split("|")]
    if "\t" in line:
        return [c.strip() for c in line.strip().split("\t")]
    return []


def _table_rows(reply: str) -> list[tuple[str, int]]:
    """(label, point) of every table row, the points read from the column the header names."""
    rows: list[tuple[str, int]] = []
    value_column: int | None = None
    possible: set[int] = set()  # columns of points possible: never read
    for line in reply.splitlines():
        cells = _cells(line)
        if len(cells) < 2 or all(_SEPARATOR.match(c.replace(" ", "")) or not c for c in cells):
            continue
        values = [parse_value(c) for c in cells]
        if all(v is None for v in values[1:]):
            if any(w in " ".join(cells).lower() for w in _HEADER_WORDS):  # a header: a new table
                possible = {i for i, c in enumerate(cells) if _POSSIBLE_HEADER.search(c)}
                heads = [i for i, c in enumerate(cells) if _VALUE_HEADER.search(c) and i not in possible]
                value_column = heads[-1] if heads else None
            continue
        label_at = 1 if re.fullmatch(r"#?\d+\.?", cells[0]) and len(cells) >= 3 else 0
        value = None
        if value_column is not None and label_at < value_column < len(cells):
            value = values[value_column]
        if value is None:
            readable = [i for i in range(label_at + 1, len(cells)) if i not in possible]
            value = next((values[i] for i in reversed(readable) if values[i] is not None), None)
        if value is not None:
            rows.append((cells[label_at].strip("*_` "), value))
    return rows


def _line_row(line: str) -> tuple[str, int] | None:
    """'label: value' (bullets, numbering and bold around it allowed); the value after the first
    separator that gives one ('Illustrates simile: 1 - clear' and 'Illustrates folk-physics - 1' both)."""
    body = _BULLET.sub("", line).strip()
    parts = _LINE_SPLIT.split(body)
    for cut in range(1, len(parts)):
        label = " ".join(parts[:cut]).strip("*_` ")
        value = parse_value(parts[cut])
        if label and value is not None:
            return label, value
    return None


def _rows(reply: str) -> list[tuple[str, int]]:
    """(label, point) of every row of the reply: its tables, or else its 'label: value' lines."""
    rows = _table_rows(reply)
    if not rows:
        for line in reply.split("Explanation")[0].splitlines():
            row = _line_row(line)
            if row is not None:
                rows.append(row)
    return rows


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


def _named(label: str, rubric: Sequence[Criterion]) -> int | None:
    """The criterion a row label names: by its number in the rubric ('Point 3', '#3'), else by content
    (a skill's longer name wins ties); None when it names none."""
    number = _CRITERION_NUMBER.match(label.strip())
    if number is not None:
        n = int(number.group(1))
        return n - 1 if 1 <= n <= len(rubric) else None
    scored = [(_matches(label, c), len(c.skill or ""), i) for i, c in enumerate(rubric)]
    best = max(scored)
    return best[2] if best[0] > 0 else None


def parse_grade(reply: str, rubric: Sequence[Criterion]) -> ParsedGrade:
    rows = _rows(reply)
    named = [_named(label, rubric) for label, _ in rows]
    # summary rows ('Total', 'Overall', 'Final score') name no criterion: dropped before anything counts rows
    kept = [
        (row, i) for row, i in zip(rows, named, strict=True) if i is not None or not _SUMMARY.search(row[0])
    ]
    if all(i is None for _, i in kept):
        if len(kept) != len(rubric):  # nothing names a criterion and position would guess: unparseable
            return ParsedGrade(points=None, rows=len(kept))
        # the labels say nothing ('A', 'B', ...) and the row count is right: by position
        return ParsedGrade(points=[value for (_, value), _ in kept], rows=len(kept))
    points: list[int | None] = [None] * len(rubric)
    for (_, value), index in kept:
        if index is not None and points[index] is None:  # the first row naming a criterion counts
            points[index] = value
    missing = tuple(i for i, p in enumerate(points) if p is None)
    return ParsedGrade(points=[p or 0 for p in points], rows=len(kept), missing=missing)
