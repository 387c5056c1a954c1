"""ReasonFormer through the whole platform: a tiny pre-training run and a fine-tuning run initialised from
it by run id (the worker finds its saved model under the shared artifact root), their result records, and
the 422s of bad specs, including a source run that is no finished pre-training run."""

from __future__ import annotations

from typing import Any

import pytest

from reasonlab_sdk.client import Invalid
from tests.integration.platform import Platform

pytestmark = pytest.mark.slow

TINY = {"steps": 4, "batch_size": 8, "log_every": 1, "checkpoint_every": 2, "max_new_tokens": 6}


def _invalid(platform: Platform, kind: str, spec: dict[str, Any]) -> list[tuple[Any, ...]]:
    with pytest.raises(Invalid) as info:
        platform.client.create_experiment("bad", kind, spec)
    return [tuple(e["loc"]) for e in info.value.errors]


def test_pretrain_then_finetune_from_it_through_the_platform(embedded_platform: Platform) -> None:
    p = embedded_platform
    p.start_api()
    assert _invalid(p, "reasonformer_pretrain", {"model": {"top_k": 9}}) == [
        ("body", "spec", "model", "top_k")
    ]
    assert _invalid(p, "reasonformer_pretrain", {"model": {"depth": 0}}) == [
        ("body", "spec", "model", "depth")
    ]
    skills = ["reverse", "sort", "shift", "lookup", "rotate", "general", "juggle"]
    assert _invalid(p, "reasonformer_pretrain", {"model": {"skills": skills}}) == [
        ("body", "spec", "model", "skills", "6")  # the API names list items as strings
    ]
    assert _invalid(p, "reasonformer_finetune", {"init": {"run_id": 424242}}) == [
        ("body", "spec", "init", "run_id")
    ]

    p.start_worker()
    pre = p.client.create_experiment(
        "rf-pretrain", "reasonformer_pretrain", {"data": {"eval_per_task": 1}, "train": TINY}
    )
    pre_run = pre["runs"][0]["id"]
    # queued or running: not yet a finished pre-training run
    assert _invalid(p, "reasonformer_finetune", {"init": {"run_id": pre_run}}) == [
        ("body", "spec", "init", "run_id")
    ]
    (run,) = p.wait_finished([pre_run], timeout=400)
    assert run["status"] == "succeeded", p.diagnostics()
    kinds = {r["kind"] for r in p.client.get_experiment_results(pre["id"])}
    assert kinds == {"reasonformer_eval", "routing"}

    fine = p.client.create_experiment(
        "rf-finetune",
        "reasonformer_finetune",
        {"init": {"run_id": pre_run}, "data": {"train_per_task": 8, "eval_per_task": 2}, "train": TINY},
    )
    (run,) = p.wait_finished([fine["runs"][0]["id"]], timeout=400)
    assert run["status"] == "succeeded", p.diagnostics()
    (evaluation,) = p.client.get_experiment_results(fine["id"], kind="reasonformer_eval")
    payload = evaluation["payload"]
    assert payload["pretrained"] and payload["source_run_id"] == pre_run and payload["label"] == "Shared (S)"
    assert {t["task"] for t in payload["tasks"]} == {"compose2", "compose3", "choose2"}
    (routing,) = p.client.get_experiment_results(fine["id"], kind="routing")
    assert routing["payload"]["order_match_heldout"] is not None
    assert "eval/average" in p.client.metric_keys(run["id"])
