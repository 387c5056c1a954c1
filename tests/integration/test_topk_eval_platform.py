"""topk_eval through the whole platform: a tiny smoe_sraven run trained at k = 2,
then topk_eval on its saved model by run id evaluates k' = 1..8 (the worker finds the model under the
shared artifact root) and posts the row of the train-k x eval-k' matrix; the 422s of bad specs, including a
source run that is missing, of another kind, or not finished."""

from __future__ import annotations

from typing import Any

import pytest

from reasonlab_sdk.client import Invalid
from tests.integration.platform import Platform

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore")]

TINY_SRAVEN = {
    "data": {"num_features": 2},
    "model": {"d_model": 32, "num_layers": 2, "num_heads": 4, "qk_dim": 16, "v_dim": 16, "mlp_hidden": 32},
    "moe": {"num_experts": 8, "top_k": 2, "expert_hidden": 32},
    "train": {"steps": 12, "batch_size": 16, "warmup_steps": 2, "eval_interval": 6, "eval_size": 64},
}


def _invalid(platform: Platform, spec: dict[str, Any]) -> list[tuple[Any, ...]]:
    with pytest.raises(Invalid) as info:
        platform.client.create_experiment("bad", "topk_eval", spec)
    return [tuple(e["loc"]) for e in info.value.errors]


def test_topk_eval_of_an_smoe_run_trained_at_k2_through_the_platform(embedded_platform: Platform) -> None:
    p = embedded_platform
    p.start_api()
    assert _invalid(p, {"eval_k": [0]}) == [("body", "spec", "eval_k", "0")]
    assert _invalid(p, {"eval_k": [1, 9]}) == [("body", "spec", "eval_k", "1")]  # the demo's E is 8
    assert _invalid(p, {"target": "hf", "hf": {"model": "tiny-mixtral"}, "eval_k": [5]}) == [
        ("body", "spec", "eval_k", "0")
    ]
    # the shape before the union still submits (a stored spec or an old script): its source run is checked
    assert _invalid(p, {"smoe": {"run_id": 424242}}) == [("body", "spec", "target", "run_id")]

    p.start_worker()
    source = p.client.create_experiment("smoe-k2", "smoe_sraven", TINY_SRAVEN)
    source_run = source["runs"][0]["id"]
    # queued or running: not yet a finished smoe_sraven run
    assert _invalid(p, {"target": {"type": "smoe_sraven", "run_id": source_run}}) == [
        ("body", "spec", "target", "run_id")
    ]
    (run,) = p.wait_finished([source_run], timeout=400)
    assert run["status"] == "succeeded", p.diagnostics()
    # a run of another kind is refused too
    assert _invalid(p, {"target": {"type": "reasonformer", "pretrain_run_id": source_run}}) == [
        ("body", "spec", "target", "pretrain_run_id")
    ]
    (cell,) = p.client.get_experiment_results(source["id"], kind="sraven_cell")

    evaluation = p.client.create_experiment(
        "topk-k2",
        "topk_eval",
        {"target": {"type": "smoe_sraven", "run_id": source_run, "eval_batch_size": 64}},
    )
    (run,) = p.wait_finished([evaluation["runs"][0]["id"]], timeout=400)
    assert run["status"] == "succeeded", p.diagnostics()
    rows = p.client.get_experiment_results(evaluation["id"], kind="topk_eval_point")
    payloads = sorted((r["payload"] for r in rows), key=lambda q: q["eval_k"])
    assert [q["eval_k"] for q in payloads] == list(range(1, 9))
    assert {(q["train_k"], q["num_experts"], q["renormalises"], q["source_run_id"]) for q in payloads} == {
        (2, 8, True, source_run)
    }
    assert payloads[1]["value"] == pytest.approx(cell["payload"]["test_acc"])  # k' = k: the run's own score
    assert "test_acc/train_k2" in p.client.metric_keys(run["id"])
