"""MLflow's own client (the venv's ``mlflow``, unchanged) against the MLflow-compatible routes of a real API
on loopback (backend/mlflowcompat/): experiments, runs, params, tags, metrics one by one and in batches,
metric history, run search, artifacts up and down, set_terminated; then what ReasonLab itself shows of the
run. Errors come back in MLflow's shape, so the client raises its own ``MlflowException`` codes."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import uvicorn
from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking._tracking_service.utils import _artifact_repos_cache

from backend.db import get_engine, session_factory, session_scope
from backend.runs import service
from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)

T0 = 1_700_000_000_000  # a metric timestamp (ms) MLflow's client sends and the platform keeps


@pytest.fixture
def base(api: Api, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The test's API served on loopback; MLflow's client configured for it (the admin's API token, no
    retries: an error is the answer, not a minute of backoff)."""
    config = uvicorn.Config(api.client.app, host="127.0.0.1", port=0, lifespan="off", log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    # MLflow's client keeps each run's artifact repository (resolved to a server's address) by run id, for
    # the process: each test's database numbers its runs from 1 again, on a server of another port
    _artifact_repos_cache.clear()
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", api.admin_token)
    # the fluent API reads MLFLOW_TRACKING_URI only while no global URI is set (another test may set one)
    import mlflow.tracking._tracking_service.utils as tracking_utils

    monkeypatch.setattr(tracking_utils, "_tracking_uri", None)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "60")
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def _uri(base: str, project: str = "default") -> str:
    return f"{base}/api/v1/mlflow/{project}"


def _series(api: Api, run_id: str, key: str) -> list[tuple[int, Any, str]]:
    got = api.client.get(
        f"/api/v1/runs/{run_id}/metrics",
        params={"keys": key, "max_points": 10_000, "with_time": "true"},
        headers=api.h(),
    ).json()
    return [(b["step_start"], b["last"], b["time"]) for b in got["series"][key]["buckets"]]


@pytest.mark.heavy
def test_the_mlflow_client_logs_a_run_that_reasonlab_shows(api: Api, base: str, tmp_path: Path) -> None:
    client = MlflowClient(tracking_uri=_uri(base))
    exp_id = client.create_experiment("mlflow-exp", tags={"team": "nlp", "mlflow.note.content": "notes"})
    assert client.get_experiment_by_name("mlflow-exp").experiment_id == exp_id
    assert (
        client.get_experiment_by_name("no such experiment") is None
    )  # RESOURCE_DOES_NOT_EXIST, read as none
    experiment = client.get_experiment(exp_id)
    assert experiment.tags["team"] == "nlp" and experiment.tags["mlflow.note.content"] == "notes"
    client.create_experiment("other-exp")
    named = client.search_experiments(filter_string="name LIKE 'mlflow%' and tags.team = 'nlp'")
    assert [e.experiment_id for e in named] == [exp_id]
    ordered = client.search_experiments(order_by=["name DESC"], max_results=2)
    assert [e.name for e in ordered] == ["other-exp", "mlflow-exp"]
    with pytest.raises(MlflowException) as taken:
        client.create_experiment("mlflow-exp")
    assert taken.value.error_code == "RESOURCE_ALREADY_EXISTS"

    run = client.create_run(exp_id, run_name="first", tags={"stage": "dev", "mlflow.user": "alice"})
    rid = run.info.run_id
    assert run.info.status == "RUNNING" and run.info.run_name == "first" and run.info.user_id == "alice"
    client.log_param(rid, "lr", "0.1")
    client.set_tag(rid, "team", "nlp")
    for step in range(5):
        client.log_metric(rid, "loss", 1.0 / (step + 1), timestamp=T0 + step, step=step)
    client.log_batch(
        rid,
        metrics=[
            Metric("acc", 0.5, T0, 0),
            Metric("acc", float("nan"), T0 + 1, 1),
            Metric("train/lr", 1e-3, T0, 0),
            Metric("eval:acc", 0.25, T0, 0),  # a key MLflow's server takes
        ],
        params=[Param("batch", "32")],
        tags=[RunTag("stage", "prod"), RunTag("mlflow.note.content", "a note")],
    )

    history = client.get_metric_history(rid, "loss")
    assert [(m.step, m.value, m.timestamp) for m in history] == [(s, 1.0 / (s + 1), T0 + s) for s in range(5)]
    pages, token = [], None  # the history a page at a time, as the client asks past 25,000 points
    while True:
        params = {
            "run_id": rid,
            "metric_key": "loss",
            "max_results": 2,
            **({"page_token": token} if token else {}),
        }
        page = _get(base, "metrics/get-history", params, api.admin_token).json()
        pages.append([int(m["step"]) for m in page["metrics"]])
        token = page.get("next_page_token")
        if not token:
            break
    assert pages == [[0, 1], [2, 3], [4]]
    acc = client.get_metric_history(rid, "acc")
    assert acc[0].value == 0.5 and math.isnan(acc[1].value)  # NaN is stored as NaN, answered as NaN
    got = client.get_run(rid)
    assert got.data.params == {"lr": "0.1", "batch": "32"}
    assert got.data.metrics["loss"] == 0.2 and got.data.metrics["train/lr"] == 1e-3
    assert got.data.metrics["eval:acc"] == 0.25
    tags = got.data.tags
    assert tags["team"] == "nlp" and tags["stage"] == "prod" and tags["mlflow.runName"] == "first"
    assert tags["mlflow.note.content"] == "a note" and tags["mlflow.user"] == "alice"
    client.delete_tag(rid, "team")
    assert "team" not in client.get_run(rid).data.tags

    # artifacts through MLflow's artifact proxy, and back
    local = tmp_path / "report.txt"
    local.write_text("hello from mlflow\n")
    client.log_artifact(rid, str(local), "plots")
    assert [(f.path, f.is_dir) for f in client.list_artifacts(rid)] == [("plots", True)]
    assert [(f.path, f.file_size) for f in client.list_artifacts(rid, "plots")] == [("plots/report.txt", 18)]
    fetched = client.download_artifacts(rid, "plots/report.txt", str(tmp_path / "back"))
    assert Path(fetched).read_text() == "hello from mlflow\n"

    # a second run, then search with a filter and an order
    other = client.create_run(exp_id, run_name="second").info.run_id
    client.log_batch(other, metrics=[Metric("loss", 0.9, T0, 4)], params=[Param("lr", "0.1")])
    found = client.search_runs([exp_id], "params.lr = '0.1'", order_by=["metrics.loss DESC"])
    assert [r.info.run_id for r in found] == [other, rid]
    found = client.search_runs(
        [exp_id], "metrics.loss < 0.5 and tags.stage = 'prod' and attributes.status = 'RUNNING'"
    )
    assert [r.info.run_id for r in found] == [rid]
    assert [r.info.run_id for r in client.search_runs([exp_id], "attributes.run_name LIKE 'sec%'")] == [other]
    page = client.search_runs([exp_id], max_results=1, order_by=["attributes.run_name ASC"])
    assert [r.info.run_name for r in page] == ["first"] and page.token
    rest = client.search_runs([exp_id], order_by=["attributes.run_name ASC"], page_token=page.token)
    assert [r.info.run_name for r in rest] == ["second"] and not rest.token

    client.set_terminated(rid)
    assert client.get_run(rid).info.status == "FINISHED"

    # what ReasonLab shows of it
    shown = api.client.get(f"/api/v1/runs/{rid}", headers=api.h()).json()
    assert shown["kind"] == "external" and shown["status"] == "succeeded" and shown["name"] == "first"
    assert shown["queue"] == "mlflow" and shown["experiment_id"] == int(exp_id)
    assert shown["logged_params"] == {"lr": "0.1", "batch": "32"}
    assert sorted(shown["tags"]) == ["stage=prod"]
    assert [(s, v) for s, v, _ in _series(api, rid, "loss")] == [(s, 1.0 / (s + 1)) for s in range(5)]
    assert _series(api, rid, "loss")[0][2].startswith("2023-11-14T22:13:20")  # MLflow's timestamp kept
    assert [v for _, v, _ in _series(api, rid, "acc")] == [0.5, None]
    provenance = api.client.get(f"/api/v1/runs/{rid}/provenance", headers=api.h()).json()
    assert provenance["mlflow_tags"]["mlflow.user"] == "alice"
    listed = api.client.get(f"/api/v1/runs/{rid}/artifacts", headers=api.h()).json()
    assert [i["path"] for i in listed["items"]] == ["outputs/plots/report.txt"]
    experiment_row = api.client.get(f"/api/v1/experiments/{exp_id}", headers=api.h()).json()
    assert experiment_row["kind"] == "external" and experiment_row["name"] == "mlflow-exp"


@pytest.mark.heavy
def test_the_fluent_api_logs_into_the_default_experiment_and_resumes_a_run(
    api: Api, base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mlflow

    monkeypatch.setenv("MLFLOW_TRACKING_URI", _uri(base))
    with mlflow.start_run(run_name="fluent") as run:  # no experiment set: MLflow's "0", the Default
        mlflow.log_metric("x", 1.0, step=0)
        mlflow.log_params({"a": 1, "b": "two"})
        mlflow.set_tag("kind", "demo")
    rid = run.info.run_id
    with mlflow.start_run(run_id=rid):  # reopened: the run's next attempt
        mlflow.log_metric("x", 2.0, step=1)
    with pytest.raises(RuntimeError), mlflow.start_run(run_name="broken"):
        raise RuntimeError("the script fails")
    broken = mlflow.last_active_run()
    shown = api.client.get(f"/api/v1/runs/{rid}", headers=api.h()).json()
    assert shown["status"] == "succeeded" and shown["attempt"] == 2 and shown["tags"] == ["kind=demo"]
    assert shown["logged_params"] == {"a": "1", "b": "two"}
    assert [(s, v) for s, v, _ in _series(api, rid, "x")] == [(0, 1.0), (1, 2.0)]
    experiment = api.client.get(f"/api/v1/experiments/{shown['experiment_id']}", headers=api.h()).json()
    assert experiment["name"] == "Default" and experiment["kind"] == "external"
    assert broken is not None
    failed = api.client.get(f"/api/v1/runs/{broken.info.run_id}", headers=api.h()).json()
    assert failed["status"] == "failed"


@pytest.mark.heavy
def test_a_silent_mlflow_run_outlives_the_heartbeat_timeout_and_is_crashed_after_its_own(
    api: Api, base: str
) -> None:
    """MLflow's client sends no heartbeat: its writes are its heartbeats, and the reaper waits
    ``REASONLAB_MLFLOW_RUN_TIMEOUT`` (2 s here) for one, not the heartbeat timeout; a run it crashed that
    its client then finishes ends as the client says."""
    client = MlflowClient(tracking_uri=_uri(base))
    rid = client.create_run("0").info.run_id
    factory = session_factory(get_engine(api.settings.database_url))

    def reap() -> list[tuple[int, str]]:
        with session_scope(factory) as s:
            return service.reap(s, timeout_seconds=0.3, mlflow_timeout_seconds=2.0)

    time.sleep(2.5)  # silent past both timeouts
    client.log_metric(rid, "loss", 1.0, step=0)  # a write: its heartbeat
    assert reap() == []
    time.sleep(2.5)
    assert reap() == [(int(rid), "failed")]
    crashed = api.client.get(f"/api/v1/runs/{rid}", headers=api.h()).json()
    assert crashed["status"] == "failed" and crashed["error"] == "crashed: no heartbeat for 2 s"
    client.log_metric(rid, "loss", 0.5, step=1)  # a late write still lands
    client.set_terminated(rid, "FINISHED")
    ended = api.client.get(f"/api/v1/runs/{rid}", headers=api.h()).json()
    assert ended["status"] == "succeeded" and ended["error"] is None
    assert [s for s, _, _ in _series(api, rid, "loss")] == [0, 1]


# -- errors in MLflow's shape ---------------------------------------------------------------------------------


def _post(base: str, path: str, body: Any, token: str | None) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.post(f"{_uri(base)}/api/2.0/mlflow/{path}", json=body, headers=headers, timeout=30)


def _get(
    base: str, path: str, params: dict[str, Any], token: str | None, project: str = "default"
) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.get(
        f"{_uri(base, project)}/api/2.0/mlflow/{path}", params=params, headers=headers, timeout=30
    )


def _error(response: requests.Response) -> tuple[int, str, str]:
    body = response.json()
    assert set(body) == {"error_code", "message"}, body
    return response.status_code, body["error_code"], body["message"]


def test_without_a_token_the_answer_is_mlflows_401(api: Api, base: str) -> None:
    assert _error(_post(base, "runs/create", {"experiment_id": "0"}, None))[:2] == (401, "UNAUTHENTICATED")
    assert _error(_get(base, "runs/get", {"run_id": "1"}, None))[:2] == (401, "UNAUTHENTICATED")
    assert _error(_get(base, "runs/get", {"run_id": "1"}, "rl_not_a_token"))[:2] == (401, "UNAUTHENTICATED")


def test_another_projects_runs_and_experiments_do_not_exist_here(api: Api, base: str) -> None:
    elsewhere = MlflowClient(tracking_uri=_uri(base, "elsewhere-mlflow"))
    api.user("olga", project="elsewhere-mlflow", role="member")  # makes the project
    exp_id = elsewhere.create_experiment("theirs")
    rid = elsewhere.create_run(exp_id).info.run_id
    here = MlflowClient(tracking_uri=_uri(base))
    for call in (
        lambda: here.get_run(rid),
        lambda: here.get_experiment(exp_id),
        lambda: here.log_metric(rid, "x", 1),
    ):
        with pytest.raises(MlflowException) as missing:
            call()
        assert missing.value.error_code == "RESOURCE_DOES_NOT_EXIST"
    outsider = api.user("otto", project="otto-only")
    status, code, _ = _error(_get(base, "runs/get", {"run_id": rid}, outsider, project="elsewhere-mlflow"))
    assert (status, code) == (404, "RESOURCE_DOES_NOT_EXIST")  # a project the caller is not in: none


def test_a_viewer_reads_but_cannot_create_runs(api: Api, base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rid = MlflowClient(tracking_uri=_uri(base)).create_run("0").info.run_id
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", api.user("vera", role="viewer"))
    viewer = MlflowClient(tracking_uri=_uri(base))
    assert viewer.get_run(rid).info.run_id == rid
    for call in (lambda: viewer.create_run("0"), lambda: viewer.log_metric(rid, "x", 1.0)):
        with pytest.raises(MlflowException) as denied:
            call()
        assert denied.value.error_code == "PERMISSION_DENIED"
    status, code, _ = _error(_post(base, "runs/create", {}, api.user("vic", role="viewer")))
    assert (status, code) == (403, "PERMISSION_DENIED")


def test_bad_input_is_mlflows_400_naming_the_field(api: Api, base: str) -> None:
    token = api.admin_token
    rid = MlflowClient(tracking_uri=_uri(base)).create_run("0").info.run_id
    metric = {"run_id": rid, "key": "loss", "value": 1.0, "timestamp": T0, "step": 0}
    cases = [
        ("runs/log-metric", {**metric, "value": "not a number"}, "value"),
        ("runs/log-metric", {**metric, "step": -1}, "step"),
        ("runs/log-metric", {**metric, "key": "_reserved"}, "key"),
        ("runs/log-metric", {**metric, "run_id": "abc"}, "run_id"),
        (
            "runs/log-batch",
            {"run_id": rid, "metrics": [metric | {"timestamp": "soon"}]},
            "metrics[0].timestamp",
        ),
        ("runs/log-batch", {"run_id": rid, "params": [{"key": "a/../b", "value": "1"}]}, "params[0].key"),
        ("runs/set-tag", {"run_id": rid, "key": "long", "value": "x" * 200}, "key"),
        ("runs/update", {"run_id": rid, "status": "PAUSED"}, "status"),
        ("runs/search", {"experiment_ids": ["0"], "filter": "metrics.loss <"}, "filter"),
        ("runs/search", {"experiment_ids": ["0"], "filter": "params.lr = 1 or params.lr = 2"}, "filter"),
        ("runs/search", {"experiment_ids": ["x1"]}, "experiment_ids[0]"),
        ("runs/search", {"experiment_ids": ["0"], "order_by": ["attributes.color"]}, "order_by[0]"),
        ("experiments/create", {"name": ""}, "name"),
    ]
    for path, body, field in cases:
        status, code, message = _error(_post(base, path, body, token))
        assert (status, code) == (400, "INVALID_PARAMETER_VALUE"), (path, body, message)
        assert field in message, (path, body, message)
    assert _error(_post(base, "runs/restore", {"run_id": rid}, token))[:2] == (404, "ENDPOINT_NOT_FOUND")
    huge = requests.post(
        f"{_uri(base)}/api/2.0/mlflow/runs/log-batch",
        data=b"{" + b" " * (5 * 1024 * 1024) + b"}",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        timeout=30,
    )
    assert _error(huge)[:2] == (413, "INVALID_PARAMETER_VALUE")


def test_a_run_token_reaches_no_mlflow_route(api: Api, base: str) -> None:
    opened = api.client.post(
        "/api/v1/projects/1/runs/external", json={"experiment": "sdk"}, headers=api.h()
    ).json()
    status, code, _ = _error(_get(base, "runs/get", {"run_id": opened["id"]}, opened["run_token"]))
    assert (status, code) == (403, "PERMISSION_DENIED")


# -- Transformers' Trainer, unchanged -----------------------------------------------------------------------

TRAINER = textwrap.dedent(
    """
    import sys

    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


    class Tokens(torch.utils.data.Dataset):
        def __len__(self):
            return 24

        def __getitem__(self, i):
            ids = torch.randint(0, 64, (16,), generator=torch.Generator().manual_seed(i))
            return {"input_ids": ids, "labels": ids}


    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2))
    args = TrainingArguments(
        output_dir=sys.argv[1],
        max_steps=6,
        per_device_train_batch_size=4,
        logging_steps=2,
        report_to=["mlflow"],
        run_name="tiny-gpt2",
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    Trainer(model=model, args=args, train_dataset=Tokens()).train()
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_transformers_trainer_reporting_to_mlflow_logs_its_loss_into_reasonlab(
    api: Api, base: str, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": _uri(base),
        "MLFLOW_TRACKING_TOKEN": api.admin_token,
        "MLFLOW_EXPERIMENT_NAME": "trainer",
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    script = tmp_path / "train.py"
    script.write_text(TRAINER)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "out")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    client = MlflowClient(tracking_uri=_uri(base))
    experiment = client.get_experiment_by_name("trainer")
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id])
    shown = api.client.get(f"/api/v1/runs/{run.info.run_id}", headers=api.h()).json()
    assert shown["kind"] == "external" and shown["status"] == "succeeded" and shown["name"] == "tiny-gpt2"
    assert shown["logged_params"]["n_layer"] == "2" and "learning_rate" in shown["logged_params"]
    loss = _series(api, run.info.run_id, "loss")
    assert [s for s, _, _ in loss] == [2, 4, 6] and all(v is not None and v > 0 for _, v, _ in loss)


# -- Lightning's MLFlowLogger, unchanged ---------------------------------------------------------------------

LIGHTNING = textwrap.dedent(
    """
    import sys

    import pytorch_lightning as pl
    import torch
    from pytorch_lightning.loggers import MLFlowLogger


    class Regression(pl.LightningModule):
        def __init__(self, hidden: int = 8, lr: float = 0.05):
            super().__init__()
            self.save_hyperparameters()
            self.net = torch.nn.Sequential(torch.nn.Linear(4, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1))

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.net(x), y)
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


    torch.manual_seed(0)
    x = torch.randn(64, 4)
    data = torch.utils.data.TensorDataset(x, x.sum(dim=1, keepdim=True))
    logger = MLFlowLogger(experiment_name="lightning", run_name="tiny-regression", tracking_uri=sys.argv[2])
    trainer = pl.Trainer(
        max_steps=8,
        log_every_n_steps=2,
        logger=logger,
        accelerator="cpu",
        devices=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=sys.argv[1],
    )
    trainer.fit(Regression(), torch.utils.data.DataLoader(data, batch_size=8))
    print("RUN", logger.run_id)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_lightning_mlflow_logger_logs_its_loss_and_hyperparameters_into_reasonlab(
    api: Api, base: str, tmp_path: Path
) -> None:
    """Lightning's own MLFlowLogger, given the compatibility URI and nothing else: the run, its
    hyperparameters and its loss land in ReasonLab, and the run ends as succeeded."""
    env = {**os.environ, "MLFLOW_TRACKING_TOKEN": api.admin_token, "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"}
    script = tmp_path / "fit.py"
    script.write_text(LIGHTNING)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "out"), _uri(base)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    (run_id,) = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("RUN ")]
    shown = api.client.get(f"/api/v1/runs/{run_id}", headers=api.h()).json()
    assert (shown["kind"], shown["status"], shown["name"]) == ("external", "succeeded", "tiny-regression"), (
        shown
    )
    assert shown["logged_params"]["hidden"] == "8" and shown["logged_params"]["lr"] == "0.05", shown
    loss = _series(api, run_id, "train_loss")
    # logged every second step of eight (Lightning counts its global step from 0)
    assert len(loss) == 4 and all(v is not None and v > 0 for _, v, _ in loss), loss
    assert [s for s, _, _ in loss] == sorted({s for s, _, _ in loss}), loss


def test_nan_and_infinities_logged_by_mlflow_come_back_as_such(api: Api, base: str) -> None:
    """log_metric(NaN / inf / -inf) and log_batch are stored as those values (not gaps): MLflow's client
    reads them back from get_metric_history and get_run, and the platform's metric route says which."""
    client = MlflowClient(tracking_uri=_uri(base))
    rid = client.create_run("0").info.run_id
    client.log_metric(rid, "loss", 0.5, timestamp=T0, step=0)
    client.log_metric(rid, "loss", float("nan"), timestamp=T0 + 1, step=1)
    client.log_metric(rid, "loss", float("inf"), timestamp=T0 + 2, step=2)
    client.log_batch(
        rid, metrics=[Metric("loss", float("-inf"), T0 + 3, 3), Metric("top", float("inf"), T0, 0)]
    )
    history = client.get_metric_history(rid, "loss")
    values = [m.value for m in history]
    assert [m.step for m in history] == [0, 1, 2, 3]
    assert values[0] == 0.5 and math.isnan(values[1]) and values[2] == math.inf and values[3] == -math.inf
    latest = client.get_run(rid).data.metrics
    assert latest["loss"] == -math.inf and latest["top"] == math.inf
    raw = _get(base, "metrics/get-history", {"run_id": rid, "metric_key": "loss"}, api.admin_token).json()
    assert [m["value"] for m in raw["metrics"]] == [0.5, "NaN", "Infinity", "-Infinity"]  # protobuf's JSON
    got = api.client.get(f"/api/v1/runs/{rid}/metrics", params={"keys": "loss"}, headers=api.h()).json()
    buckets = got["series"]["loss"]["buckets"]
    assert [(b["last"], b["last_nonfinite"]) for b in buckets] == [
        (0.5, None),
        (None, "NaN"),
        (None, "Infinity"),
        (None, "-Infinity"),
    ]
    assert [(b["min"], b["max"]) for b in buckets] == [(0.5, 0.5), (None, None), (None, None), (None, None)]
