"""One cell end to end with scripted chat models: the cache makes a repeated cell ask nothing, a grader
answering garbage is asked again and then recorded as a failed grading (zeros), the sentence counter
overrides the grader, and the HF student generates the same text for a seed in a batch or alone."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from worker.core.models import load_model
from worker.core.skillmix.cache import ReplyCache
from worker.core.skillmix.chat import ChatFailure, Conversation, Reply, Sampling, user
from worker.core.skillmix.combinations import sample_combinations
from worker.core.skillmix.hf_chat import HFChat
from worker.core.skillmix.pipeline import Engine, Stopped, score_cell
from worker.core.skillmix.rule_grader import RuleGrader, rule_table
from worker.core.skillmix.skills import load_skills, load_topics

COMBOS = sample_combinations(load_skills(), load_topics(), 2, 2, seed=0)


class Scripted:
    """A chat model answering from a function of (conversation, seed); counts its calls."""

    def __init__(self, identity: str, answer) -> None:  # type: ignore[no-untyped-def]
        self.identity = identity
        self.answer = answer
        self.asked = 0

    def complete(
        self, conversations: Sequence[Conversation], seeds: Sequence[int], sampling: Sampling
    ) -> list[Reply]:
        self.asked += len(conversations)
        return [self.answer(c, s) for c, s in zip(conversations, seeds, strict=True)]


def student_answer(conversation: Conversation, seed: int) -> Reply:
    topic = COMBOS[0].topic if COMBOS[0].topic in conversation[0]["content"] else COMBOS[1].topic
    if len(conversation) == 1:
        return f"Answer: A long first draft about {topic}. It has two sentences.\nExplanation: none"
    return f"Answer: Her voice was as warm as fresh bread, {topic} says.\nExplanation: none"


def engine(tmp_path: Path, grader: Scripted | RuleGrader, student: Scripted | None = None) -> Engine:
    return Engine(
        student=student or Scripted("student", student_answer),
        grader=grader,
        student_key={"model": "student", "ept": None},
        generation=Sampling(0.7, 32),
        grading=Sampling(0.7, 128),
        cache=ReplyCache(tmp_path / "cache"),
        chunk=3,
    )


def test_a_repeated_cell_is_served_from_the_cache(tmp_path: Path) -> None:
    student = Scripted("student", student_answer)
    grader = Scripted("grader", lambda c, s: rule_table(c[-1]["content"]))
    first = engine(tmp_path, grader, student)
    gens = first.generate(COMBOS, 3, seed=1)
    cell = score_cell(gens, first.grade(gens, 3, seed=1), False)
    assert student.asked == 2 * 2 * 3 and grader.asked == 2 * 3 * 3
    assert first.cache.misses == 12 + 18 and first.cache.hits == 0
    assert gens[0].text is not None and gens[0].text.startswith("Her voice was as warm")

    again = engine(tmp_path, grader, student)  # a new process: only the disk cache is shared
    gens2 = again.generate(COMBOS, 3, seed=1)
    cell2 = score_cell(gens2, again.grade(gens2, 3, seed=1), False)
    assert (student.asked, grader.asked) == (12, 18)
    assert again.cache.hits == 30 and again.cache.misses == 0
    assert cell2.metrics == cell.metrics and cell2.points == cell.points

    other_seed = engine(tmp_path, grader, student)
    other_seed.generate(COMBOS, 3, seed=2)
    assert student.asked == 24  # another seed is another key


def test_garbage_is_asked_again_then_a_failed_grading_that_scores_zero(tmp_path: Path) -> None:
    calls: dict[str, int] = {}

    def flaky(conversation: Conversation, seed: int) -> Reply:
        prompt = conversation[-1]["content"]
        calls[prompt] = calls.get(prompt, 0) + 1
        if COMBOS[1].topic in prompt.split("The student's text")[0]:
            return "I am unable to produce a table." if calls[prompt] % 2 else ChatFailure("timed out")
        return "garbage first" if calls[prompt] == 1 else rule_table(prompt)

    e = engine(tmp_path, Scripted("grader", flaky))
    gens = e.generate(COMBOS, 1, seed=0)
    gradings = e.grade(gens, 3, seed=0)
    assert [g.points is not None for g in gradings[0]] == [True, True, True]  # recovered on a retry
    assert all(g.points is None and g.failure for g in gradings[1])  # failed after 3 attempts
    cell = score_cell(gens, gradings, False)
    assert cell.failed_gradings == 3 and cell.total_gradings == 6
    # the failed gradings vote zeros; the sentence point is the counter's (one sentence: earned)
    assert cell.points[1] == [0, 0, 0, 0, 1]
    assert cell.per_combination[1]["total_score"] == 1.0


def test_the_sentence_counter_overrides_the_grader_and_the_filter_zeroes_named_skills(tmp_path: Path) -> None:
    def says_two_sentences(conversation: Conversation, seed: int) -> Reply:
        return f"Answer: {COMBOS[0].skill_names[0]} is used here. Another sentence.\nExplanation: x"

    all_ones = Scripted("grader", lambda c, s: "\n".join(f"| row {i} | 1 |" for i in range(5)))
    e = engine(tmp_path, all_ones, Scripted("s2", says_two_sentences))
    gens = e.generate(COMBOS[:1], 1, seed=0)
    gradings = e.grade(gens, 3, seed=0)
    assert score_cell(gens, gradings, False).points == [[1, 1, 1, 1, 0]]  # 2 sentences > max(1, k-1)
    assert score_cell(gens, gradings, True).points == [[0, 1, 1, 1, 0]]  # names its first skill


def test_a_cancel_stops_between_chunks(tmp_path: Path) -> None:
    e = engine(tmp_path, RuleGrader())
    e.should_stop = lambda: True
    with pytest.raises(Stopped):
        e.generate(COMBOS, 3, seed=0)


@pytest.mark.usefixtures("one_thread")
def test_hf_student_reply_depends_on_its_seed_not_its_batch() -> None:
    lm = load_model("tiny-llama", seed=0)
    chat = HFChat(lm.model.eval(), lm.tokenizer, "tiny-llama", batch_size=4)
    convs = [
        [user("Hi")],
        [user("A much longer message about gardening and bees, to force padding.")],
        [user("Yo")],
    ]
    sampling = Sampling(0.7, 8)
    batched = chat.complete(convs, [1, 2, 3], sampling)
    alone = [chat.complete([c], [s], sampling)[0] for c, s in zip(convs, [1, 2, 3], strict=True)]
    assert batched == alone
    greedy = chat.complete(convs, [1, 2, 3], Sampling(0.0, 8))
    assert greedy == chat.complete(convs, [4, 5, 6], Sampling(0.0, 8))  # greedy ignores seeds


def test_a_grading_naming_only_some_criteria_is_partial_and_counted(tmp_path: Path) -> None:
    """A reply with no row for the topic: the topic scores 0 in that grading (never a neighbour's point),
    the grading is recorded as partial, and the cell counts it."""

    def no_topic_row(conversation: Conversation, seed: int) -> Reply:
        table = rule_table(conversation[-1]["content"]).splitlines()
        return "\n".join(line for line in table if "Pertains to" not in line).replace(
            "| Total |", "| Overall |"
        )

    e = engine(tmp_path, Scripted("grader", no_topic_row))
    gens = e.generate(COMBOS, 1, seed=0)
    gradings = e.grade(gens, 3, seed=0)
    assert all(g.partial and g.points is not None and g.points[2] == 0 for rounds in gradings for g in rounds)
    cell = score_cell(gens, gradings, False)
    assert (cell.partial_gradings, cell.failed_gradings, cell.total_gradings) == (6, 0, 6)
    assert all(points[2] == 0 for points in cell.points)
    whole = engine(tmp_path / "whole", Scripted("grader", lambda c, s: rule_table(c[-1]["content"])))
    gens = whole.generate(COMBOS, 1, seed=0)
    assert score_cell(gens, whole.grade(gens, 3, seed=0), False).partial_gradings == 0
