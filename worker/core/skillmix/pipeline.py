"""One Skill-Mix cell end to end: two-turn generations by a student, gradings by a grader (both chat
models, both cached), the sentence-counter override, the optional skill-name filter, the vote and the
six metrics (paper 004 section 2.2 and A.3.1; REFERENCE.md, "Skill-Mix")."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from worker.core.skillmix.cache import ReplyCache, cache_key
from worker.core.skillmix.chat import ChatFailure, ChatModel, Conversation, Reply, Sampling, assistant, user
from worker.core.skillmix.combinations import Combination
from worker.core.skillmix.metrics import (
    MeanStderr,
    aggregate,
    best_of,
    filter_named_skills,
    majority,
    text_metrics,
)
from worker.core.skillmix.parse import parse_grade
from worker.core.skillmix.prompts import extract_answer, first_turn, second_turn, sentence_limit
from worker.core.skillmix.rubric import criteria, grading_prompt
from worker.core.skillmix.sentences import count_sentences

Progress = Callable[[str, int, int], None]  # (phase, done, total)


class Stopped(Exception):
    """A cancel was requested between two chunks; what was done so far is in the cache."""


def derive_seed(*parts: int) -> int:
    """A 31-bit seed from integers (the run seed, a combination, a generation, a grading round)."""
    digest = hashlib.sha256(",".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass
class Generation:
    combination: Combination
    index: int  # which of the combination's generations
    seed: int
    replies: list[str] = field(default_factory=list)  # the student's reply per turn
    text: str | None = None  # the graded text: the last turn's answer; None when the student failed
    failure: str | None = None


@dataclass
class Grading:
    points: list[int] | None  # the parsed points (rubric order), None for a failed grading
    failure: str | None = None
    attempts: int = 1
    partial: bool = False  # the reply named only some criteria: the others scored 0 (parse.py)
    reply: str | None = None  # the grader's reply the points were parsed from (the per-example table)


# a combination whose every grading is in: (combination, its generations, their gradings in round order)
Graded = Callable[[Combination, list[Generation], list[list[Grading]]], None]


@dataclass
class Engine:
    """What a cell needs besides its combinations: the models, their settings and the cache."""

    student: ChatModel
    grader: ChatModel
    student_key: dict[str, Any]  # what names the student's replies in the cache (model, ept, ...)
    generation: Sampling
    grading: Sampling
    cache: ReplyCache
    chunk: int = 8  # conversations per call: progress and cancel are checked between chunks
    grading_attempts: int = 3  # a failed or unparseable grading is asked again up to this many times
    should_stop: Callable[[], bool] = lambda: False
    progress: Progress = lambda phase, done, total: None
    graded: Graded = lambda combination, gens, gradings: None  # as each combination's gradings complete
    grader_key: dict[str, Any] | None = None  # what names the grader's replies; None = its identity alone

    def _ask(
        self,
        model: ChatModel,
        key_parts: dict[str, Any],
        conversations: Sequence[Conversation],
        seeds: Sequence[int],
        sampling: Sampling,
        phase: str,
        accept: Callable[[int, str], bool] = lambda n, reply: True,
        attempts: int = 1,
        answered: Callable[[list[tuple[int, Reply]]], None] = lambda done: None,
    ) -> list[Reply]:
        """Replies through the cache: only the misses reach the model, in chunks. A reply that
        ``accept(position, reply)`` refuses is asked again (with a derived seed) up to ``attempts`` times,
        then is a ChatFailure. ``answered`` gets each final (position, reply): the cached ones first, then
        each chunk's."""
        keys = [
            cache_key(
                **key_parts,
                prompt=conv,
                seed=seed,
                temperature=sampling.temperature,
                max_new_tokens=sampling.max_new_tokens,
            )
            for conv, seed in zip(conversations, seeds, strict=True)
        ]
        replies: list[Reply | None] = [self.cache.get(k) for k in keys]
        todo = [i for i, r in enumerate(replies) if r is None]
        done = len(replies) - len(todo)
        answered([(i, r) for i, r in enumerate(replies) if r is not None])
        self.progress(phase, done, len(replies))
        for start in range(0, len(todo), self.chunk):
            if self.should_stop():
                raise Stopped(phase)
            rows = todo[start : start + self.chunk]
            pending = list(rows)
            for attempt in range(attempts):
                seeds_now = [seeds[i] if attempt == 0 else derive_seed(seeds[i], attempt) for i in pending]
                answers = model.complete([conversations[i] for i in pending], seeds_now, sampling)
                retry = []
                for i, answer in zip(pending, answers, strict=True):
                    if isinstance(answer, str) and accept(i, answer):
                        replies[i] = answer
                        self.cache.put(keys[i], answer, model=key_parts.get("model"), seed=seeds[i])
                    else:
                        reason = answer.reason if isinstance(answer, ChatFailure) else "unparseable reply"
                        replies[i] = ChatFailure(f"{reason} (after {attempt + 1} attempt(s))")
                        retry.append(i)
                pending = retry
                if not pending:
                    break
            done += len(rows)
            answered([(i, r) for i in rows if (r := replies[i]) is not None])
            self.progress(phase, done, len(replies))
        return [r if r is not None else ChatFailure("not asked") for r in replies]

    def generate(self, combinations: Sequence[Combination], generations: int, seed: int) -> list[Generation]:
        """Two turns per (combination, generation): the text, then its shortened version."""
        gens = [
            Generation(c, g, derive_seed(seed, c.index, g)) for c in combinations for g in range(generations)
        ]
        convs: list[Conversation] = [[user(first_turn(g.combination))] for g in gens]
        for turn, phase in ((0, "generation turn 1"), (1, "generation turn 2")):
            live = [i for i, g in enumerate(gens) if g.failure is None]
            if turn == 1:
                for i in live:
                    c = gens[i].combination
                    convs[i] = [*convs[i], assistant(gens[i].replies[0]), user(second_turn(c))]
            replies = self._ask(
                self.student,
                {"kind": "generation", **self.student_key},
                [convs[i] for i in live],
                [gens[i].seed for i in live],
                self.generation,
                phase,
            )
            for i, reply in zip(live, replies, strict=True):
                if isinstance(reply, ChatFailure):
                    gens[i].failure = reply.reason
                else:
                    gens[i].replies.append(reply)
        for g in gens:
            if g.failure is None:
                g.text = extract_answer(g.replies[-1])
        return gens

    def grade(self, gens: Sequence[Generation], rounds: int, seed: int) -> list[list[Grading]]:
        """``rounds`` gradings of every generated text (none for a failed generation). ``graded`` hears of
        each combination as soon as its last grading is in (one whose every generation failed: at once)."""
        asks: list[tuple[int, int]] = [
            (i, r) for i, g in enumerate(gens) if g.text is not None for r in range(rounds)
        ]
        prompts = {i: grading_prompt(g.combination, g.text) for i, g in enumerate(gens) if g.text is not None}
        rubrics = {i: criteria(g.combination) for i, g in enumerate(gens)}
        members: dict[int, list[int]] = {}  # combination index -> its generations' positions
        for i, g in enumerate(gens):
            members.setdefault(g.combination.index, []).append(i)
        left = {c: sum(1 for i, _ in asks if gens[i].combination.index == c) for c in members}
        done: dict[tuple[int, int], Grading] = {}

        def gradings_of(i: int) -> list[Grading]:
            return [done[(i, r)] for r in range(rounds) if (i, r) in done]

        def finished(c: int) -> None:
            rows = members[c]
            self.graded(gens[rows[0]].combination, [gens[i] for i in rows], [gradings_of(i) for i in rows])

        def answered(replies: list[tuple[int, Reply]]) -> None:
            for n, reply in replies:
                i, r = asks[n]
                if isinstance(reply, ChatFailure):
                    done[(i, r)] = Grading(None, reply.reason)
                else:
                    parsed = parse_grade(reply, rubrics[i])
                    done[(i, r)] = Grading(parsed.points, partial=parsed.partial, reply=reply)
                c = gens[i].combination.index
                left[c] -= 1
                if left[c] == 0:
                    finished(c)

        for c, count in left.items():
            if count == 0:
                finished(c)
        if asks:
            self._ask(
                self.grader,
                {"kind": "grading", **(self.grader_key or {"model": self.grader.identity})},
                [[user(prompts[i])] for i, _ in asks],
                [derive_seed(seed, gens[i].combination.index, gens[i].index, r, 7) for i, r in asks],
                self.grading,
                "grading",
                accept=lambda n, reply: parse_grade(reply, rubrics[asks[n][0]]).points is not None,
                attempts=self.grading_attempts,
                answered=answered,
            )
        return [gradings_of(i) for i in range(len(gens))]


def voted_points(gen: Generation, gradings: Sequence[Grading], filter_skill_names: bool) -> list[int]:
    """The text's points: majority over its gradings (a failed grading counts as zeros, REFERENCE.md),
    the sentence point replaced by the sentence counter's verdict, and, with the filter, skill points of
    skills the text names zeroed. A failed generation scores zeros."""
    k = gen.combination.k
    if gen.text is None:
        return [0] * (k + 3)
    rows = [g.points if g.points is not None else [0] * (k + 3) for g in gradings]
    points = majority(rows) if rows else [0] * (k + 3)
    points[-1] = int(count_sentences(gen.text) <= sentence_limit(k))
    if filter_skill_names:
        points = filter_named_skills(points, gen.text, gen.combination.skill_names)
    return points


@dataclass
class CellScore:
    metrics: dict[str, MeanStderr]
    per_combination: list[dict[str, float]]
    points: list[list[int]]  # per generation, in the order of the generations
    failed_gradings: int
    partial_gradings: int  # parsed, but some criteria named by no row (scored 0)
    total_gradings: int
    failed_generations: int


def combination_best(
    gens: Sequence[Generation], gradings: Sequence[Sequence[Grading]], filter_skill_names: bool
) -> dict[str, float]:
    """One combination's score: per metric, the best of its generations' voted points."""
    return best_of(
        [
            text_metrics(voted_points(g, gr, filter_skill_names), g.combination.k)
            for g, gr in zip(gens, gradings, strict=True)
        ]
    )


def score_cell(
    gens: Sequence[Generation], gradings: Sequence[Sequence[Grading]], filter_skill_names: bool
) -> CellScore:
    points = [voted_points(g, gr, filter_skill_names) for g, gr in zip(gens, gradings, strict=True)]
    members: dict[int, list[int]] = {}
    for n, g in enumerate(gens):
        members.setdefault(g.combination.index, []).append(n)
    per_combination = [
        combination_best([gens[n] for n in members[c]], [gradings[n] for n in members[c]], filter_skill_names)
        for c in sorted(members)
    ]
    return CellScore(
        metrics=aggregate(per_combination),
        per_combination=per_combination,
        points=points,
        failed_gradings=sum(1 for gr in gradings for x in gr if x.points is None),
        partial_gradings=sum(1 for gr in gradings for x in gr if x.partial),
        total_gradings=sum(len(gr) for gr in gradings),
        failed_generations=sum(1 for g in gens if g.text is None),
    )
