"""The ``routing`` record of a ReasonFormer's predictions (section 5.4, Figure 3): per task and step the
mean router weights and stop gates, case studies and, on the synthetic suite, skill and order matches."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from torch import nn

from worker.core.reasonformer.analysis import TaskRouting, summarize_routing
from worker.core.reasonformer.data.example import Example
from worker.core.reasonformer.data.synthetic import PRIMITIVE_NAMES, SkillSuite
from worker.core.reasonformer.evaluate import Predictions
from worker.core.reasonformer.model import ReasonFormerForConditionalGeneration
from worker.kinds.reasonformer.common.model import label_of
from worker.kinds.reasonformer.common.provenance import Provenance
from worker.specs.reasonformer.common.results import Routing, RoutingCase, RoutingCaseStep, TaskRoutingRecord


@dataclass(frozen=True)
class SuiteAnalysis:
    """The synthetic suite's part of the analysis: its programs' order is known, so the record scores
    skill matches (primitives) and order matches (trained and held-out compositions). ``regroup``
    renames an example's task for the analysis (fine-tuning: by program)."""

    suite: SkillSuite
    regroup: Callable[[Example], str] | None = None


def _weighted(routings: Sequence[TaskRouting], attr: str) -> float | None:
    pairs = [(getattr(r, attr), r.count) for r in routings if getattr(r, attr) is not None]
    total = sum(n for _, n in pairs)
    return sum(v * n for v, n in pairs) / total if total else None


def _instances(routings: Sequence[TaskRouting], attr: str) -> int | None:
    """The instances ``_weighted(routings, attr)`` is a proportion of (for its 95% interval)."""
    total = sum(r.count for r in routings if getattr(r, attr) is not None)
    return total or None


def _task_record(r: TaskRouting) -> TaskRoutingRecord:
    return TaskRoutingRecord(
        task=r.task,
        count=r.count,
        weights=r.weights,
        stop_gates=r.stop_gates,
        expected=r.expected,
        step_match=r.step_match,
        match=r.match,
        order_match=r.order_match,
        cases=[
            RoutingCase(
                input=c.input,
                target=c.target,
                prediction=c.prediction,
                expected=list(c.expected),
                steps=[
                    RoutingCaseStep(skills=list(s.skills), weights=list(s.weights), stop_gate=s.stop_gate)
                    for s in c.steps
                ],
            )
            for c in r.cases
        ],
    )


def routing_record(
    model: nn.Module,
    pred: Predictions,
    provenance: Provenance,
    *,
    cases_per_task: int,
    seed: int,
    suite: SuiteAnalysis | None = None,
) -> tuple[Routing, list[TaskRouting]] | None:
    """The ``routing`` record of a ReasonFormer's predictions (None for plain T5)."""
    if not isinstance(model, ReasonFormerForConditionalGeneration) or not pred.probs:
        return None
    rc = model.reasoning
    regroup = suite.regroup if suite is not None else None
    examples = [
        Example(regroup(e), e.input, e.output, e.skills, e.options, e.answer) if regroup else e
        for e in pred.examples
    ]
    routings = summarize_routing(
        examples,
        pred.probs,
        pred.stop_gates,
        rc.skills,
        rc.general_skill,
        predictions=pred.predictions,
        cases_per_task=cases_per_task,
        seed=seed,
    )
    non_general = [s for s in rc.skills if s != rc.general_skill]
    # single-skill tasks: the suite's primitives; in text data (jsonl pre-training), a task named after one
    # of the model's skills other than general (its instances are labelled with it)
    single = [r for r in routings if r.task in (PRIMITIVE_NAMES if suite else non_general)]
    trained = {">".join(p) for p in suite.suite.train_programs} if suite else set()
    heldout = {">".join(p) for p in suite.suite.heldout_programs} if suite else set()
    record = Routing(
        stage=provenance.stage,
        label=label_of(model, provenance.pretrained),
        variant=rc.variant,  # type: ignore[arg-type]
        skills=list(rc.skills),
        depth=rc.depth,
        top_k=rc.k,
        general_skill=rc.general_skill,
        chance=1.0 / len(non_general) if non_general else None,
        skill_match=_weighted(single, "match"),
        order_match_trained=_weighted([r for r in routings if r.task in trained], "order_match"),
        order_match_heldout=_weighted([r for r in routings if r.task in heldout], "order_match"),
        skill_match_n=_instances(single, "match"),
        order_match_trained_n=_instances([r for r in routings if r.task in trained], "order_match"),
        order_match_heldout_n=_instances([r for r in routings if r.task in heldout], "order_match"),
        tasks=[_task_record(r) for r in routings],
    )
    return record, routings


def routing_metrics(record: Routing) -> dict[str, float]:
    """The record's ``routing/*`` metrics: the matches it could score."""
    out: dict[str, float] = {}
    for key in ("skill_match", "order_match_trained", "order_match_heldout"):
        value = getattr(record, key)
        if value is not None:
            out[f"routing/{key}"] = value
    return out
