"""The SRAVEN top-k example sweep, shrunk, through the whole platform: API, worker, results grid."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.integration.platform import Platform

pytestmark = pytest.mark.slow
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sraven_topk_sweep.yaml"


def test_shrunk_example_sweep_fills_the_results_grid(embedded_platform: Platform) -> None:
    doc = yaml.safe_load(EXAMPLE.read_text())
    assert set(doc["sweep"]["grid"]) == {"moe.top_k", "data.num_features", "model.attention"}
    spec = doc["spec"]
    spec["model"] = {
        "d_model": 16,
        "num_layers": 1,
        "num_heads": 2,
        "qk_dim": 8,
        "v_dim": 8,
        "mlp_hidden": 16,
    }
    spec["moe"] = {**spec["moe"], "num_experts": 4, "expert_hidden": 8}
    spec["train"] = {
        **spec["train"],
        "batch_size": 16,
        "steps": 6,
        "warmup_steps": 2,
        "eval_interval": 3,
        "eval_size": 64,
        "checkpoint_every": 3,
        "log_every": 1,
    }
    sweep = {"grid": {"moe.top_k": [1, 4], "data.num_features": [2], "model.attention": ["softmax", "hyla"]}}
    embedded_platform.start_api()
    embedded_platform.start_worker()
    exp = embedded_platform.client.create_experiment(doc["name"], doc["kind"], spec, sweep)
    runs = embedded_platform.wait_finished([r["id"] for r in exp["runs"]], timeout=600)
    assert [r["status"] for r in runs] == ["succeeded"] * 4, embedded_platform.diagnostics()
    cells = embedded_platform.client.get_experiment_results(exp["id"], kind="sraven_cell")
    grid = {(c["payload"]["attention"], c["payload"]["M"], c["payload"]["top_k"]) for c in cells}
    assert grid == {(a, 2, k) for a in ("softmax", "hyla") for k in (1, 4)}
    for c in cells:
        assert 0.0 <= c["payload"]["test_acc"] <= 1.0 and c["payload"]["steps"] == 6
        assert c["params"]["moe.top_k"] == c["payload"]["top_k"]
    keys = embedded_platform.client.metric_keys(runs[0]["id"])
    assert "loss" in keys and "test_acc" in keys
