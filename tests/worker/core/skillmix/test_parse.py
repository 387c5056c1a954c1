"""The rubric parser on the table shapes graders answer with, and on a corpus of grader replies
(grader_replies/, with every expected point written by hand in expected.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from worker.core.skillmix.combinations import Combination
from worker.core.skillmix.parse import parse_grade, parse_number, parse_value
from worker.core.skillmix.rubric import criteria
from worker.core.skillmix.skills import Skill

COMBO = Combination(
    0,
    (Skill("simile", "d", "e"), Skill("folk physics (common knowledge physics)", "d", "e")),
    "gardening",
)
RUBRIC = criteria(COMBO)  # simile, folk physics, topic, sense, at most one sentence
EXPECTED = [1, 0, 1, 1, 0]

SHAPES = {
    "outer pipes": """Here's the grading table:

| Criteria | Points Earned |
|----------|---------------|
| Illustrates simile | 1 |
| Illustrates folk physics (common knowledge physics) | 0 |
| Pertains to gardening | 1 |
| Makes sense | 1 |
| At most one sentence | 0 |
| Total Points Earned | 3 |

Explanation: the simile is clear.""",
    "no outer pipes": """Criterion | Score
--- | ---
Illustrates simile | 1
Illustrates folk physics | 0
Pertains to gardening | 1
Text makes sense | 1
At most one sentence | 0
Total | 3""",
    "row numbers, yes/no and a score column": """| # | Criterion | Met | Point |
|:-:|:--|:-:|--:|
| 1 | Illustrates simile | yes | 1 |
| 2 | Illustrates folk physics (common knowledge physics) | no | 0 |
| 3 | Pertains to gardening | yes | 1 |
| 4 | Makes sense | yes | 1 |
| 5 | At most one sentence | no | 0 |""",
    "fractions and words": """| Criteria | Points |
| --- | --- |
| **Illustrates simile** | **1/1** |
| Illustrates folk physics | 0/1 |
| Relevant to the topic | 1 point |
| Coherence | 1.0 |
| Sentence limit | 0 points |""",
    "rows out of order, matched by content": """| Criterion | Points |
|---|---|
| Makes sense | 1 |
| Pertains to gardening | 1 |
| At most one sentence | 0 |
| Illustrates folk physics | 0 |
| Illustrates simile | 1 |""",
    "generic labels, right count: by position": """| Criterion | Points |
|---|---|
| A | 1 |
| B | 0 |
| C | 1 |
| D | 1 |
| E | 0 |""",
    "lines without a table": """Grades:
- Illustrates simile: 1
- Illustrates folk physics: 0
- Pertains to gardening: 1
- Makes sense: 1
- At most one sentence: 0
Explanation: fine.""",
    "tabs": "Criterion\tPoints\nIllustrates simile\t1\nIllustrates folk physics\t0\nPertains to gardening\t1\n"
    "Makes sense\t1\nAt most one sentence\t0",
    "max and score columns: the header picks score": """| Criterion | Max | Score |
|---|---|---|
| Illustrates simile | 1 | 1 |
| Illustrates folk physics | 1 | 0 |
| Pertains to gardening | 1 | 1 |
| Makes sense | 1 | 1 |
| At most one sentence | 1 | 0 |""",
}


@pytest.mark.parametrize("reply", SHAPES.values(), ids=SHAPES.keys())
def test_parser_reads_every_table_shape(reply: str) -> None:
    parsed = parse_grade(reply, RUBRIC)
    assert parsed.points == EXPECTED


def test_missing_rows_count_as_zero_and_garbage_is_a_failure() -> None:
    partial = "| Criterion | Points |\n|--|--|\n| Illustrates simile | 1 |\n| Makes sense | 1 |"
    parsed = parse_grade(partial, RUBRIC)
    assert parsed.points == [1, 0, 0, 1, 0] and parsed.missing == (1, 2, 4) and parsed.partial
    for garbage in ("", "I cannot grade this.", "<html>error</html>", "| a | b |\n| c | d |"):
        assert parse_grade(garbage, RUBRIC).points is None


def test_a_longer_skill_name_wins_over_a_shorter_one_inside_it() -> None:
    combo = Combination(0, (Skill("question", "d", "e"), Skill("rhetorical question", "d", "e")), "chess")
    reply = "| c | p |\n|-|-|\n| Illustrates rhetorical question | 1 |\n| Illustrates question | 0 |"
    assert parse_grade(reply, criteria(combo)).points == [0, 1, 0, 0, 0]


@pytest.mark.parametrize(
    ("cell", "point"),
    [("1", 1), ("0", 0), ("1.0", 1), ("0.5", 0), ("2", 1), ("1/1", 1), ("0/1", 0), ("Yes", 1), ("no", 0),
     ("✓", 1), ("✗", 0), ("**1**", 1), ("1 point", 1), ("", None), ("Illustrates", None),
     ("1/2", 0), ("2/2", 1), ("0.5/1", 0), ("1 out of 1", 1), ("1 of 2", 0), ("1/0", None),
     ("1 (clear)", 1), ("no - off topic", 0), ("Yes, a simile", 1), ("5 criteria", None)],
)  # fmt: skip
def test_values(cell: str, point: int | None) -> None:
    assert parse_value(cell) == point


@pytest.mark.parametrize(
    ("cell", "value"),
    [("1/2", 0.5), ("3/4", 0.75), ("0.5/1", 0.5), ("2/2", 1.0), ("1 out of 2", 0.5), ("1", 1.0), ("x", None)],
)
def test_a_over_b_is_a_fraction(cell: str, value: float | None) -> None:
    assert parse_number(cell) == value


CORPUS = Path(__file__).parent / "grader_replies"
HAND: dict[str, Any] = json.loads((CORPUS / "expected.json").read_text())
REPLIES = sorted(name for name in HAND if not name.startswith("_"))


def test_the_corpus_has_an_expectation_for_every_reply_and_real_local_grader_replies() -> None:
    assert sorted(p.name for p in CORPUS.iterdir() if p.name != "expected.json") == REPLIES
    assert sum(name.startswith("local_") for name in REPLIES) >= 4
    assert len(REPLIES) >= 20


@pytest.mark.parametrize("name", REPLIES)
def test_corpus_reply_gets_exactly_the_hand_written_points(name: str) -> None:
    expected = HAND[name]
    rubric = RUBRIC
    if "skills" in expected:
        rubric = criteria(
            Combination(0, tuple(Skill(n, "d", "e") for n in expected["skills"]), expected["topic"])
        )
    parsed = parse_grade((CORPUS / name).read_text(), rubric)
    assert parsed.points == expected["points"], expected["why"]
    assert list(parsed.missing) == expected["missing"], expected["why"]
    assert parsed.partial == bool(expected["missing"])


def test_the_parser_never_invents_a_point() -> None:
    """Whatever rows are dropped or repeated, a parsed point of 1 is a row naming that criterion with a
    full point: deleting any one row of a full-marks table scores that criterion 0 and nothing else."""
    rows = [f"| {c.label} | 1 |" for c in RUBRIC]
    for drop in range(len(RUBRIC)):
        kept = [r for i, r in enumerate(rows) if i != drop]
        for extra in (
            "| Total | 4 |",
            "| Overall | 4/5 |",
            "| Final score | 4 |",
            rows[(drop + 1) % len(rows)],
        ):
            reply = "\n".join(["| Criterion | Points |", "|---|---|", *kept, extra])
            parsed = parse_grade(reply, RUBRIC)
            assert parsed.points == [0 if i == drop else 1 for i in range(len(RUBRIC))], (drop, extra)
            assert parsed.missing == (drop,)
