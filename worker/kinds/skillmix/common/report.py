"""The cell's report once every grading is in: failures, the ``gradings`` table, the ``skillmix_cell``
record and the final metrics."""

from __future__ import annotations

from typing import Any

from worker.core.skillmix.cache import ReplyCache
from worker.core.skillmix.combinations import Combination
from worker.core.skillmix.metrics import METRICS
from worker.core.skillmix.pipeline import CellScore, Generation, Grading, score_cell
from worker.core.skillmix.rubric import criteria
from worker.core.skillmix.sentences import count_sentences
from worker.kinds.skillmix.common.participants import Grader, Student
from worker.kinds.skillmix.common.running import cache_counts
from worker.specs.skillmix.skillmix import SkillmixCell, SkillmixSpec
from worker.tracking.context import RunContext


def example_rows(
    gens: list[Generation], gradings: list[list[Grading]], points: list[Any]
) -> list[dict[str, Any]]:
    """The per-example table ``gradings``: one row per (combination, generation), keyed by both: the
    skills and topic, the student's replies and graded text, each grading's reply and its points per
    criterion (rubric order), and the points the cell scored the generation with."""
    rows = []
    for gen, rounds, scored in zip(gens, gradings, points, strict=True):
        c = gen.combination
        labels = [criterion.label for criterion in criteria(c)]
        rows.append(
            {
                "key": f"combination-{c.index}/generation-{gen.index}",
                "combination": c.index,
                "generation": gen.index,
                "skills": c.skill_names,
                "topic": c.topic,
                "replies": gen.replies,
                "reply": gen.text,
                "failure": gen.failure,
                "gradings": [
                    {
                        "reply": grading.reply,
                        "points": None
                        if grading.points is None
                        else dict(zip(labels, grading.points, strict=False)),
                        "partial": grading.partial,
                        "failure": grading.failure,
                    }
                    for grading in rounds
                ],
                "points": scored,
            }
        )
    return rows


def log_failures(ctx: RunContext, gens: list[Generation], gradings: list[list[Grading]]) -> None:
    for i, gen in enumerate(gens):
        for grading in gradings[i]:
            if grading.failure is not None:
                ctx.log(
                    f"combination {gen.combination.index} generation {gen.index}: failed grading: {grading.failure}"
                )
        if gen.failure is not None:
            ctx.log(f"combination {gen.combination.index} generation {gen.index}: failed: {gen.failure}")


def cell_samples(
    combinations: list[Combination], gens: list[Generation], gradings: list[list[Grading]], cell: CellScore
) -> list[dict[str, Any]]:
    """Per combination: its texts, their points and sentence counts, partial gradings and best metrics."""
    samples = []
    for c, best in zip(combinations, cell.per_combination, strict=True):
        rows = [
            (gen, p) for gen, p in zip(gens, cell.points, strict=True) if gen.combination.index == c.index
        ]
        samples.append(
            {
                "index": c.index,
                "skills": c.skill_names,
                "topic": c.topic,
                "texts": [gen.text for gen, _ in rows],
                "points": [p for _, p in rows],
                "sentences": [count_sentences(gen.text) if gen.text is not None else None for gen, _ in rows],
                "partial_gradings": [
                    sum(1 for grading in gradings[n] if grading.partial)
                    for n, gen in enumerate(gens)
                    if gen.combination.index == c.index
                ],
                "best": best,
            }
        )
    return samples


def cell_record(
    spec: SkillmixSpec,
    student: Student,
    grader: Grader,
    cell: CellScore,
    cache: ReplyCache,
    samples: list[dict[str, Any]],
) -> SkillmixCell:
    metrics = {m: {"mean": cell.metrics[m].mean, "stderr": cell.metrics[m].stderr} for m in METRICS}
    return SkillmixCell.model_validate(
        {
            "model": student.label,
            "student": student.kind,
            "grader": grader.label,
            "k": spec.k,
            **student.route,
            "combinations": len(samples),
            "generations": spec.generations,
            "gradings": spec.gradings,
            "filter_skill_names": spec.filter_skill_names,
            **metrics,
            "failed_gradings": cell.failed_gradings,
            "partial_gradings": cell.partial_gradings,
            "total_gradings": cell.total_gradings,
            "failed_generations": cell.failed_generations,
            "cached_replies": cache.hits,
            "new_replies": cache.misses,
            "samples": samples,
        }
    )


def report_cell(
    ctx: RunContext,
    spec: SkillmixSpec,
    combinations: list[Combination],
    models: tuple[Student, Grader],
    cache: ReplyCache,
    gens: list[Generation],
    gradings: list[list[Grading]],
) -> None:
    """The cell's score: failures logged, the ``gradings`` table, the ``skillmix_cell`` record, the metrics
    at the last running step (the cell's own values: the same means, in index order) and progress."""
    cell = score_cell(gens, gradings, spec.filter_skill_names)
    log_failures(ctx, gens, gradings)
    samples = cell_samples(combinations, gens, gradings, cell)
    ctx.log_examples("gradings", example_rows(gens, gradings, cell.points))
    ctx.log_result(cell_record(spec, *models, cell, cache, samples))
    ctx.log_metrics(
        {
            **{m: cell.metrics[m].mean for m in METRICS},
            "failed_gradings": float(cell.failed_gradings),
            "partial_gradings": float(cell.partial_gradings),
            **cache_counts(cache),
        },
        len(combinations),
    )
    ctx.progress(300, 300, f"done: full marks {cell.metrics['full_marks'].mean:.2f}, "
                           f"skill fraction {cell.metrics['skill_fraction'].mean:.2f}")  # fmt: skip
