"""One evaluation of either kind: the predictions on the held-out examples, their ``eval/*`` metrics with
the ``routing/*`` ones merged in, and the ``routing`` record."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from torch import nn

from worker.core.reasonformer.data.example import Example
from worker.core.reasonformer.data.tokenizer import TextTokenizer
from worker.core.reasonformer.evaluate import Predictions, eval_metrics, predict_eval
from worker.kinds.reasonformer.common.provenance import Provenance
from worker.kinds.reasonformer.common.routing_record import SuiteAnalysis, routing_metrics, routing_record
from worker.specs.reasonformer.common.results import Routing


@dataclass(frozen=True)
class Evaluation:
    """What a kind evaluates on and how: the examples, their tokenizer and decoding, the routing
    analysis' case studies and seed, each task's reasoning type (Table 1; None where unknown), and the
    synthetic suite's analysis where the data is the suite's."""

    examples: Sequence[Example]
    tokenizer: TextTokenizer
    batch_size: int
    max_source: int
    max_new_tokens: int
    cases_per_task: int
    seed: int
    reasoning_of: Callable[[str], str | None]
    suite: SuiteAnalysis | None = None


def predictions(model: nn.Module, evaluation: Evaluation, device: str) -> Predictions:
    return predict_eval(
        model,
        evaluation.examples,
        evaluation.tokenizer,
        batch_size=evaluation.batch_size,
        max_source=evaluation.max_source,
        max_new_tokens=evaluation.max_new_tokens,
        device=device,
    )


def evaluate(
    model: nn.Module, evaluation: Evaluation, provenance: Provenance, device: str, *, cases_per_task: int
) -> tuple[Predictions, dict[str, float], Routing | None]:
    """The predictions, their metrics and the ``routing`` record (None for plain T5). Used during training
    (no case studies) and at the end (``evaluation.cases_per_task`` of them)."""
    pred = predictions(model, evaluation, device)
    metrics = eval_metrics(pred)
    routed = routing_record(
        model,
        pred,
        provenance,
        cases_per_task=cases_per_task,
        seed=evaluation.seed,
        suite=evaluation.suite,
    )
    if routed is None:
        return pred, metrics, None
    metrics.update(routing_metrics(routed[0]))
    return pred, metrics, routed[0]
