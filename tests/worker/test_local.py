"""``run_local`` (``reasonlab run spec.yaml``): local files plus an MLflow run, no server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from worker.local import resolve_spec, run_local

SPEC = {
    "kind": "diagnostic",
    "seed": 2,
    "data": {"n_samples": 64, "n_features": 4},
    "model": {"hidden": 8, "layers": 1},
    "train": {"steps": 20, "batch_size": 16, "checkpoint_every": 10, "log_every": 3},
}


def test_local_run_writes_files_and_an_mlflow_run(tmp_path: Path, mlflow_uri: str) -> None:
    from mlflow import MlflowClient

    uri = mlflow_uri
    progress: list[tuple[int, int]] = []
    outcome = run_local(
        SPEC,
        None,
        tmp_path / "run",
        mlflow_uri=uri,
        progress_callback=lambda d, t, m: progress.append((d, t)),
    )

    assert outcome.status == "succeeded" and outcome.error is None
    out = outcome.out_dir
    points = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [p["step"] for p in points if p["key"] == "loss"] == [
        3,
        6,
        9,
        12,
        15,
        18,
        20,
    ]  # every 3rd + the last
    (result,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert result["kind"] == "diagnostic" and result["payload"]["steps"] == 20
    assert json.loads((out / "params.json").read_text())["train"]["steps"] == 20
    assert json.loads((out / "status.json").read_text())["status"] == "succeeded"
    assert "final loss" in (out / "logs.txt").read_text()
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step-10.pt", "step-20.pt"]
    assert progress[-1] == (20, 20)

    assert outcome.mlflow_run_id is not None
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(outcome.mlflow_run_id)
    assert run.info.status == "FINISHED"
    assert run.data.params["model.hidden"] == "8"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "loss")] == [3, 6, 9, 12, 15, 18, 20]
    artifacts = [a.path for a in client.list_artifacts(run.info.run_id, "results")]
    assert artifacts == ["results/diagnostic-000.json"]
    assert [a.path for a in client.list_artifacts(run.info.run_id, "model")] == ["model/step-20.pt"]
    assert client.list_artifacts(run.info.run_id, "outputs") == []  # the local folder is the run's record


def test_local_run_failure_is_reported_not_raised(tmp_path: Path) -> None:
    spec = {**SPEC, "train": {**SPEC["train"], "fail_at_step": 4}}  # type: ignore[dict-item]
    outcome = run_local(spec, "diagnostic", tmp_path)
    assert outcome.status == "failed"
    assert outcome.error is not None and "DiagnosticFailure" in outcome.error
    assert json.loads((tmp_path / "status.json").read_text())["status"] == "failed"
    assert "DiagnosticFailure" in (tmp_path / "logs.txt").read_text()


def test_resolve_spec_refuses_unknown_or_mismatched_kinds() -> None:
    assert resolve_spec({}, "diagnostic")[1].train.steps == 200  # {} is a valid spec
    with pytest.raises(ValueError, match="unknown kind"):
        resolve_spec({"kind": "nope"})
    with pytest.raises(ValueError, match="says kind"):
        resolve_spec({"kind": "other"}, "diagnostic")
