"""The synonym-intervention phase (Tables 1, 4, 5): one ``synonym_consistency`` record per rate and the
per-example table ``synonyms``."""

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


def report_synonyms(
    ctx: RunContext,
    spec: CarmaSpec,
    plan: Plan,
    model: nn.Module,
    test: Evaluation,
    synonym_map: str | None,
    device: torch.device,
) -> None:
    """Words of the originally-correct test items replaced by synonyms at each rate and seed: the
    records, and the table of what was replaced and what the model answered after."""
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
