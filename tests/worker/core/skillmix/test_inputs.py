"""Loaders in Skill-Mix's formats, seeded combinations, the generation prompts, answer extraction and
the sentence counter."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.core.skillmix.combinations import sample_combinations
from worker.core.skillmix.prompts import count_words, extract_answer, first_turn, second_turn, sentence_limit
from worker.core.skillmix.rubric import criteria, grading_prompt, read_grading_prompt
from worker.core.skillmix.sentences import count_sentences
from worker.core.skillmix.skills import SkillListError, load_skills, load_topics
from worker.specs.skillmix.skillmix import BUILTIN_SKILLS


def test_builtin_lists_load_and_the_spec_knows_their_size() -> None:
    skills, topics = load_skills(), load_topics()
    assert len(skills) == BUILTIN_SKILLS and len(topics) == 10
    assert all(s.name and s.definition and s.example for s in skills)


def test_released_csv_shape_with_extra_columns_quotes_and_blank_rows(tmp_path: Path) -> None:
    path = tmp_path / "skills.csv"
    path.write_text(
        "category,skill,definition,example,comments,status,added by\n"
        'logical,my skill,"a, b","""quoted"" example",checked,keep,me\n'
        ",,,,,,\n"
        "rhetorical,other,def,ex,,,\n"
    )
    skills = load_skills(path)
    assert [(s.name, s.definition, s.example, s.category) for s in skills] == [
        ("my skill", "a, b", '"quoted" example', "logical"),
        ("other", "def", "ex", "rhetorical"),
    ]
    (tmp_path / "bad.csv").write_text("name,definition\nx,y\n")
    with pytest.raises(SkillListError, match="lacks"):
        load_skills(tmp_path / "bad.csv")
    (tmp_path / "topics.txt").write_text("# comment\nsewing\n\n  urbanism \nsewing\n")
    assert load_topics(tmp_path / "topics.txt") == ["sewing", "urbanism"]


def test_combinations_are_seeded_distinct_and_independent_of_anything_else() -> None:
    skills, topics = load_skills(), load_topics()
    a = sample_combinations(skills, topics, 3, 20, seed=5)
    assert a == sample_combinations(skills, topics, 3, 20, seed=5)
    assert a != sample_combinations(skills, topics, 3, 20, seed=6)
    assert all(len(set(c.skill_names)) == 3 for c in a)
    assert len({(frozenset(c.skill_names), c.topic) for c in a}) == 20


def test_prompts_name_skills_topic_and_the_sentence_limit() -> None:
    (c,) = sample_combinations(load_skills(), load_topics(), 3, 1, seed=0)
    turn1, turn2 = first_turn(c), second_turn(c)
    assert all(name in turn1 for name in c.skill_names) and c.topic in turn1 and "Answer:" in turn1
    assert "at most two sentences" in turn2
    assert [sentence_limit(k) for k in (1, 2, 3, 5)] == [1, 1, 2, 4]
    assert count_words(1, "sentence") == "one sentence"
    prompt = grading_prompt(c, "A text.\nTwo lines.")
    text, labels = read_grading_prompt(prompt)
    assert text == "A text.\nTwo lines." and labels == [crit.label for crit in criteria(c)]
    assert len(labels) == c.k + 3


@pytest.mark.parametrize(
    ("reply", "text"),
    [
        ("Answer: The bees hum.\nExplanation: a simile.", "The bees hum."),
        ('Sure!\n\n**Answer:** "The bees hum."\n\n**Explanation:** x', "The bees hum."),
        ("Answer: first\nExplanation: y\nAnswer: second", "second"),
        ("No markers at all.", "No markers at all."),
    ],
)
def test_answer_extraction(reply: str, text: str) -> None:
    assert extract_answer(reply) == text


@pytest.mark.parametrize(
    ("text", "n"),
    [
        ("", 0),
        ("One sentence.", 1),
        ("One. Two! Three?", 3),
        ("No final stop", 1),
        ("Dr. Smith paid 3.5 dollars, e.g. a fair price.", 1),
        ('"Really?" she asked. Yes...', 3),
        ("Wait... what? Fine.", 3),
    ],
)
def test_sentence_counter(text: str, n: int) -> None:
    assert count_sentences(text) == n
