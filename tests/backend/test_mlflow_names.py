"""One spec run either way names the same things in MLflow (common.mlflow_names): a local run
(``reasonlab run``: worker.local with its MlflowSink) and the platform's run of the same spec (the worker's
executor writing to the API, which the mirror copies into MLflow with MlflowTarget) have the same metric
names and steps, param names, result artifacts and status, for keys MLflow takes as they are and for keys
it refuses. Both write to one sqlite MLflow store (its schema takes seconds to make), each to its own
experiment, through the real ``mlflow`` package."""

from __future__ import annotations

import random
import string
from pathlib import Path
from typing import Any

import httpx
import pytest

from backend.db import get_engine, session_factory
from backend.mirror.mlflow import MlflowTarget
from backend.mirror.service import Mirror
from common.mlflow_names import MAX_KEY, MLFLOW_STATUS, mlflow_key, param_values, result_artifact
from common.runs import FINISHED_STATUSES
from common.settings import SharedSettings
from reasonlab_sdk.client import ReasonLabClient
from tests.backend.conftest import Api
from worker.specs.diagnostic.diagnostic import DiagnosticSpec
from worker.tracking.context import RunContext
from worker.tracking.writer import WriterOptions

SPEC: dict[str, Any] = {
    "seed": 3,
    "data": {"n_samples": 32, "n_features": 3},
    "model": {"hidden": 4, "layers": 1},
    "train": {"steps": 6, "batch_size": 8, "checkpoint_every": 3, "log_every": 2},
    "resources": {"device": "cpu"},
}
# keys the platform stores (at most 250 characters, not starting with "_") that MLflow refuses as they are
AWKWARD = ["eval/acc@1", "a/../b", "..x", "x/", "./a", "k:v", "π", "a b/c", "y" * 250, ".." + "z" * 248]


@pytest.fixture
def awkward_diagnostic(monkeypatch: pytest.MonkeyPatch) -> None:
    """The diagnostic kind, which also logs a metric and a param under each awkward key once it trained
    (its own keys, ``loss`` and its spec's fields, are names MLflow takes as they are)."""
    from worker.kinds.diagnostic import diagnostic

    original = diagnostic.run

    def run(spec: DiagnosticSpec, ctx: RunContext) -> None:
        original(spec, ctx)
        ctx.log_params({key: i for i, key in enumerate(AWKWARD)})
        ctx.log_metrics({key: float(i) for i, key in enumerate(AWKWARD)}, spec.train.steps)

    monkeypatch.setattr(diagnostic, "run", run)


def _sdk(api: Api) -> ReasonLabClient:
    """The worker's SDK client with the worker token, its requests answered by the test's API."""

    def forward(request: httpx.Request) -> httpx.Response:
        r = api.client.request(
            request.method, request.url.raw_path.decode(), content=request.read(), headers=request.headers
        )
        # the content is decoded already: the API's gzip encoding does not come along
        headers = {k: v for k, v in r.headers.items() if k not in ("content-encoding", "content-length")}
        return httpx.Response(r.status_code, headers=headers, content=r.content)

    token = api.worker_token["Authorization"].split()[1]
    return ReasonLabClient("http://testserver", token, transport=httpx.MockTransport(forward))


def _named(client: Any, run_id: str) -> dict[str, Any]:
    """What an MLflow run names: metric keys with their steps, param keys, result artifacts, status."""
    run = client.get_run(run_id)
    return {
        "metrics": {k: [m.step for m in client.get_metric_history(run_id, k)] for k in run.data.metrics},
        "params": sorted(run.data.params),
        "results": [a.path for a in client.list_artifacts(run_id, "results")],
        "status": run.info.status,
    }


@pytest.mark.usefixtures("awkward_diagnostic")
@pytest.mark.timeout(120)
@pytest.mark.heavy
def test_a_local_and_a_platform_run_of_one_spec_name_the_same_in_mlflow(api: Api, tmp_path: Path) -> None:
    from mlflow import MlflowClient

    from worker.executor import execute
    from worker.local import run_local

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    outcome = run_local({"kind": "diagnostic", **SPEC}, None, tmp_path / "local", mlflow_uri=uri)
    assert outcome.status == "succeeded" and outcome.mlflow_run_id is not None, outcome.error

    rid = int(api.submit(SPEC).json()["runs"][0]["id"])
    settings = SharedSettings(home=tmp_path / "worker-home", heartbeat_interval=0.05, system_metrics=False)
    status = execute(
        rid, 1, settings, client=_sdk(api), writer_options=WriterOptions(flush_interval=0.01), worker="w:1"
    )
    assert status == "succeeded"
    target = MlflowTarget(uri, tmp_path / "platform-artifacts")
    mirror_settings = api.settings.model_copy(update={"mirror_interval": 0.001})
    mirror = Mirror(mirror_settings, session_factory(get_engine(api.settings.database_url)), target=target)
    for _ in range(20):
        if mirror.tick().writes == 0:
            break
    mirrored = api.client.get(f"/api/v1/runs/{rid}", headers=api.h()).json()["mlflow_run_id"]
    assert mirrored, "the mirror made the platform run's MLflow run"

    local = _named(MlflowClient(tracking_uri=uri), outcome.mlflow_run_id)
    platform = _named(target.client, mirrored)
    assert mirrored != outcome.mlflow_run_id
    assert local == platform
    assert {mlflow_key(k) for k in AWKWARD} <= set(local["metrics"])  # every awkward key is there
    assert len({mlflow_key(k) for k in AWKWARD}) == len(AWKWARD)  # under a name of its own
    assert {mlflow_key(k[: MAX_KEY - 1]) for k in AWKWARD} <= set(local["params"])
    assert {"loss", "final_loss"} <= set(local["metrics"]) and "train.steps" in local["params"]
    assert local["results"] == ["results/diagnostic-000.json"] and local["status"] == "FINISHED"
    # both experiments open in MLflow's model-training view, not its GenAI one
    for client, run_id in (
        (MlflowClient(tracking_uri=uri), outcome.mlflow_run_id),
        (target.client, mirrored),
    ):
        experiment = client.get_experiment(client.get_run(run_id).info.experiment_id)
        assert experiment.tags.get("mlflow.experimentKind") == "custom_model_development", experiment.tags


def test_every_name_is_one_mlflow_takes() -> None:
    """Whatever the key (refused characters, paths, a leading '..', any length), its MLflow name passes
    MLflow's own checks for metrics, params and tags; names MLflow takes are kept as they are."""
    from mlflow.utils.validation import _validate_metric_name, _validate_param_name, _validate_tag_name

    rng = random.Random(0)
    alphabet = string.ascii_letters + "./ _-:@π\\" * 4
    keys = [*AWKWARD, "", ".", "..", "/", "//a", "a//b", "a/./b", ".." + "/" * 300, "x" * 300]
    keys += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 300))) for _ in range(500)]
    keys += [("." * rng.randint(2, 4) + "a/" * 200)[: rng.choice([249, 250, 251, 252])] for _ in range(50)]
    for key in keys:
        name = mlflow_key(key)
        _validate_metric_name(name)
        _validate_param_name(name)
        _validate_tag_name(name)
        assert 0 < len(name) <= MAX_KEY, (key, name)
    for name in param_values({k: 1 for k in keys}):
        _validate_param_name(name)
        assert len(name) <= MAX_KEY
    kept = ["loss", "eval/acc", "a b/c", "train.lr", "system/cpu_percent", "x" * 250]
    assert [mlflow_key(k) for k in kept] == kept
    assert mlflow_key("..x") == "_..x" and mlflow_key("a/../b") == "a_.._b" and mlflow_key("k:v") == "k_v"


def test_names_of_params_statuses_and_results() -> None:
    assert param_values({"train": {"lr": 0.1, "name": "a"}, "layers": [1, 2]}) == {
        "layers": "[1, 2]",
        "train.lr": "0.1",
        "train.name": "a",
    }
    assert set(MLFLOW_STATUS) == set(FINISHED_STATUSES)
    assert MLFLOW_STATUS == {"succeeded": "FINISHED", "failed": "FAILED", "cancelled": "KILLED"}
    assert result_artifact("diagnostic", 0) == "results/diagnostic-000.json"
    assert result_artifact("a/b", 12) == "results/a_b-012.json"
