"""The synonym-intervention phase (Tables 1, 4, 5): one ``synonym_consistency`` record per rate, the
per-example table ``synonyms``, and per rate the metrics ``consist_syn/<rate in %>`` (the mean ConsistSyn
over the replacement seeds) and ``consist_syn_cv/<rate in %>`` (its CV, eq. 13) that claims compare."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from worker.core.carma.evaluate import Evaluation
from worker.core.carma.tasks import Encoded
from worker.core.synonyms import make_source, stopwords
from worker.core.synonyms.evaluate import SynonymOutcome, synonym_intervention
from worker.kinds.carma.common.plan import Plan
from worker.specs.carma.carma import CarmaSpec, SynonymConsistency
from worker.tracking.context import RunContext


def synonym_rows(
    outcomes: list[SynonymOutcome], items: list[Encoded], before: list[int], tokenizer: Any
) -> list[dict[str, Any]]:
    """The per-example table ``synonyms``: one row per rate, seed and originally-correct test item: its
    input, the words replaced and by what, the input after, the prediction before and after (decoded)."""

    def word(token_id: int) -> str:
        return str(tokenizer.decode([token_id])).strip()

    rows = []
    for o in outcomes:
        for it in o.items:
            item = items[it.index]
            rows.append(
                {
                    "key": f"rate-{o.rate:g}/seed-{it.seed}/item-{it.index}",
                    "item": it.index,
                    "rate": o.rate,
                    "seed": it.seed,
                    "label": item.example.label,
                    "original": item.example.text,
                    "replaced_text": it.text,
                    "replaced": [{"word": w, "synonym": syn} for w, syn in it.replaced],
                    "prediction_before": word(before[it.index]),
                    "prediction_after": word(it.prediction),
                    "correct_after": it.correct,
                }
            )
    return rows


def rate_key(rate: float) -> str:
    """A rate as its metric keys name it: a percentage, ``0.25`` -> ``25``, ``0.4`` -> ``40``."""
    return f"{rate * 100:g}"


def synonym_metrics(outcomes: list[SynonymOutcome]) -> dict[str, float]:
    """Per rate: ``consist_syn/<rate>`` the mean ConsistSyn over the seeds (percent, eq. 12) and
    ``consist_syn_cv/<rate>`` its coefficient of variation (eq. 13); a run is one value of each, so a
    claim compares variants over training seeds as Tables 1, 4, 5 compare them over replacement seeds.
    A rate with no originally-correct item has neither: eq. 12 divides by their number, and a 0 would
    count in a claim as a measured ConsistSyn."""
    metrics: dict[str, float] = {}
    for o in outcomes:
        if o.correct_before == 0:
            continue
        metrics[f"consist_syn/{rate_key(o.rate)}"] = o.mean
        metrics[f"consist_syn_cv/{rate_key(o.rate)}"] = o.cv
    return metrics


def report_synonyms(
    ctx: RunContext,
    spec: CarmaSpec,
    plan: Plan,
    model: nn.Module,
    test: Evaluation,
    synonym_map: str | None,
    device: torch.device,
    step: int,
) -> None:
    """Words of the originally-correct test items replaced by synonyms at each rate and seed: the
    records, the table of what was replaced and what the model answered after, and the metrics at
    ``step`` (the training's last, as ``test_acc``)."""
    syn = spec.synonyms
    count = syn.max_items or len(plan.splits.test)
    items = plan.splits.test[:count]
    source = make_source(syn.source, synonym_map)
    outcomes = synonym_intervention(
        model,
        plan.lm.tokenizer,
        plan.template,
        items,
        test.correct[:count],
        source,
        syn.rates,
        syn.seeds,
        stopwords(),
        spec.train.eval_batch_size,
        device,
    )
    for o in outcomes:
        ctx.log_result(
            SynonymConsistency.model_validate(
                {
                    **plan.record_base(spec),
                    "rate": o.rate,
                    "source": syn.source,
                    "seeds": o.seeds,
                    "consist_syn": o.consist_syn,
                    "mean": o.mean,
                    "std": o.std,
                    "cv": o.cv,
                    "correct_before": o.correct_before,
                    "changed": o.changed,
                }
            )
        )
    ctx.log_examples("synonyms", synonym_rows(outcomes, items, test.predictions, plan.lm.tokenizer))
    ctx.log_metrics(synonym_metrics(outcomes), step)
