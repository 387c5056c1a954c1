"""The rubric parser on the table shapes graders answer with."""

from __future__ import annotations

import pytest

from worker.core.skillmix.combinations import Combination
from worker.core.skillmix.parse import parse_grade, parse_value
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
    assert parse_grade(partial, RUBRIC).points == [1, 0, 0, 1, 0]
    for garbage in ("", "I cannot grade this.", "<html>error</html>", "| a | b |\n| c | d |"):
        assert parse_grade(garbage, RUBRIC).points is None


def test_a_longer_skill_name_wins_over_a_shorter_one_inside_it() -> None:
    combo = Combination(0, (Skill("question", "d", "e"), Skill("rhetorical question", "d", "e")), "chess")
    reply = "| c | p |\n|-|-|\n| Illustrates rhetorical question | 1 |\n| Illustrates question | 0 |"
    assert parse_grade(reply, criteria(combo)).points == [0, 1, 0, 0, 0]


@pytest.mark.parametrize(
    ("cell", "point"),
    [("1", 1), ("0", 0), ("1.0", 1), ("0.5", 0), ("2", 1), ("1/1", 1), ("0/1", 0), ("Yes", 1), ("no", 0),
     ("✓", 1), ("✗", 0), ("**1**", 1), ("1 point", 1), ("", None), ("Illustrates", None)],
)  # fmt: skip
def test_values(cell: str, point: int | None) -> None:
    assert parse_value(cell) == point
