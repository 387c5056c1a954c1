"""End to end: REST -> outbox -> broker -> a real `celery worker` process -> REST, and the API's MLflow
mirror of every run (workers never talk to MLflow)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import redis
from mlflow.tracking import MlflowClient

from common.broker import PRIORITIES, REDIS_PRIORITY_SEP
from tests.backend.test_dispatch import RedisProcess, _free_port
from tests.integration.platform import Platform, wait_for

pytestmark = pytest.mark.slow
SHARED_PLATFORM_MIRROR = True  # test_sweep_of_four_runs_embedded checks MLflow (conftest.py)

SMALL = {"train": {"steps": 20, "checkpoint_every": 5}}


def _forget_tracking_uri() -> None:
    """Leave no global MLflow tracking URI behind (``set_tracking_uri("")`` would leave one: the local
    ``./mlruns`` file store, which a later test of this process relying on MLFLOW_TRACKING_URI would get)."""
    import mlflow.tracking._tracking_service.utils as tracking_utils

    tracking_utils._tracking_uri = None


def _check_sweep(platform: Platform) -> None:
    exp = platform.submit(SMALL, {"grid": {"seed": [1, 2], "train.lr": [0.01, 0.02]}}, name="sweep4")
    ids = [r["id"] for r in exp["runs"]]
    assert len(ids) == 4
    runs = platform.wait_finished(ids)
    assert [r["status"] for r in runs] == ["succeeded"] * 4, platform.diagnostics()
    platform.wait_mirrored(ids)
    runs = [platform.client.get_run(i) for i in ids]
    for r in runs:
        steps = platform.loss_steps(r["id"])
        assert [s for s, _ in steps] == list(range(1, 21))
        results = platform.client.get_results(r["id"], kind="diagnostic")
        assert len(results) == 1 and results[0]["payload"]["steps"] == 20
        assert r["mlflow_run_id"], "every run is mirrored to MLflow"
        ml = MlflowClient(platform.settings.mlflow_tracking_uri).get_run(r["mlflow_run_id"])
        assert ml.info.status == "FINISHED"
        assert (
            len(
                MlflowClient(platform.settings.mlflow_tracking_uri).get_metric_history(
                    r["mlflow_run_id"], "loss"
                )
            )
            == 20
        )
    _forget_tracking_uri()


@pytest.mark.mlflow_mirror
def test_sweep_of_four_runs_on_postgres_and_redis(pg_platform: Platform) -> None:
    pg_platform.start_api()
    pg_platform.start_worker()
    _check_sweep(pg_platform)


def test_sweep_of_four_runs_embedded(shared_embedded_platform: Platform) -> None:
    _check_sweep(shared_embedded_platform)


@pytest.mark.fault
@pytest.mark.mlflow_mirror
def test_kill9_of_the_worker_resumes_from_checkpoint(pg_platform: Platform) -> None:
    spec = {"seed": 7, "train": {"steps": 60, "checkpoint_every": 10, "step_delay": 0.15}}
    pg_platform.start_api()
    worker = pg_platform.start_worker()
    run = pg_platform.submit(spec, name="crash")["runs"][0]
    rid = run["id"]
    # kill -9 once the run is past its second checkpoint
    wait_for(lambda: len(pg_platform.loss_steps(rid)) >= 25, 120, "the run to pass step 25")
    pg_platform.kill9_worker(worker)
    killed_at = len(pg_platform.loss_steps(rid))
    assert pg_platform.client.get_run(rid)["status"] == "running"
    # the dead worker never acknowledged its message: kombu keeps it in Redis's unacked set
    assert _unacked(pg_platform) == [f"run-{rid}-attempt-1"]
    wait_for(lambda: _queued(pg_platform) == [f"run-{rid}-attempt-2"], 60, "the reaper to requeue the run")
    # ... until the reaper's requeue removes it, instead of Redis handing it out again in a week
    wait_for(lambda: _unacked(pg_platform) == [], 10, "the lost attempt's message to leave the broker")
    pg_platform.start_worker()
    (final,) = pg_platform.wait_finished([rid])
    assert final["status"] == "succeeded" and final["attempt"] == 2, pg_platform.diagnostics()
    series = pg_platform.loss_steps(rid)
    assert [s for s, _ in series] == list(range(1, 61)), f"missing or duplicate steps (killed at {killed_at})"
    total = pg_platform.client.get_metrics(rid, keys=["loss"])["series"]["loss"]["total_points"]
    assert total == 60
    # the MLflow mirror too (the API's, from the database): one entry per step, although the resumed
    # attempt logged again the steps between its checkpoint and the crash (MLflow appends), none missing
    pg_platform.wait_mirrored([rid])
    final = pg_platform.client.get_run(rid)
    mirror = MlflowClient(pg_platform.settings.mlflow_tracking_uri)
    history = mirror.get_metric_history(final["mlflow_run_id"], "loss")
    assert sorted(m.step for m in history) == list(range(1, 61)), f"killed at {killed_at}"
    assert {m.step: m.value for m in history} == dict(series)
    assert len(mirror.get_metric_history(final["mlflow_run_id"], "final_loss")) == 1
    ml = mirror.get_run(final["mlflow_run_id"])
    assert ml.info.status == "FINISHED" and ml.data.tags["reasonlab.attempt"] == "2"
    assert [a.path for a in mirror.list_artifacts(final["mlflow_run_id"], "model")] == ["model/step-60.pt"]
    _forget_tracking_uri()
    logs = "\n".join(i["line"] for i in pg_platform.client.get_logs(rid)["items"])
    assert "resum" in logs.lower(), logs[-2000:]
    # the same spec run without interruption ends on the same loss, bit for bit
    twin = pg_platform.submit({**spec, "train": {**spec["train"], "step_delay": 0.0}}, name="twin")["runs"][0]
    (twin_final,) = pg_platform.wait_finished([twin["id"]])
    assert twin_final["status"] == "succeeded"
    assert pg_platform.loss_steps(twin["id"]) == series
    assert final["summary"]["loss"] == twin_final["summary"]["loss"]


def _unacked(platform: Platform) -> list[str]:
    """Task ids of the messages workers took and did not acknowledge (kombu's Redis ``unacked`` hash)."""
    broker = redis.Redis.from_url(platform.settings.broker_url)
    return sorted(json.loads(raw)[0]["headers"]["id"] for raw in broker.hvals("unacked"))


def _queued(platform: Platform) -> list[str]:
    broker = redis.Redis.from_url(platform.settings.broker_url)
    # kombu's Redis list of the cpu queue's normal-priority messages (common.broker), newest first
    raws = broker.lrange(f"cpu{REDIS_PRIORITY_SEP}{PRIORITIES['normal']}", 0, -1)
    return [json.loads(raw)["headers"]["id"] for raw in raws]


@pytest.mark.fault
@pytest.mark.mlflow_mirror
def test_kill9_of_the_api_keeps_the_mlflow_mirror_exact(pg_platform: Platform) -> None:
    """kill -9 of the API while a run logs and the API's mirror copies it to MLflow, then a new API: the
    worker buffered meanwhile; the mirror goes on from its watermarks in the database (a batch MLflow had
    taken but whose watermark was not committed is sent again as the same points, which MLflow ignores):
    one MLflow run, one point per step, the platform's values."""
    pg_platform.env["REASONLAB_HEARTBEAT_TIMEOUT"] = "60"  # the outage is shorter than the reaper's patience
    spec = {"seed": 5, "train": {"steps": 80, "checkpoint_every": 1000, "step_delay": 0.1}}
    pg_platform.start_api()
    pg_platform.start_worker()
    rid = pg_platform.submit(spec, name="api-kill9")["runs"][0]["id"]
    wait_for(lambda: len(pg_platform.loss_steps(rid)) >= 20, 120, "the run to log its first steps")
    pg_platform.kill9_api()
    time.sleep(2)
    pg_platform.start_api()
    (final,) = pg_platform.wait_finished([rid])
    assert final["status"] == "succeeded" and final["attempt"] == 1, pg_platform.diagnostics()
    series = pg_platform.loss_steps(rid)
    assert [s for s, _ in series] == list(range(1, 81))
    pg_platform.wait_mirrored([rid])
    mid = pg_platform.client.get_run(rid)["mlflow_run_id"]
    mirror = MlflowClient(pg_platform.settings.mlflow_tracking_uri)
    history = mirror.get_metric_history(mid, "loss")
    assert sorted(m.step for m in history) == list(range(1, 81))
    assert {m.step: m.value for m in history} == dict(series)
    ml = mirror.get_run(mid)
    same = mirror.search_runs([ml.info.experiment_id], filter_string=f"tags.`reasonlab.run_id` = '{rid}'")
    assert [r.info.run_id for r in same] == [mid] and ml.info.status == "FINISHED"
    _forget_tracking_uri()


@pytest.mark.fault
def test_broker_down_at_submit_then_back(tmp_path: Path, postgres_url: str) -> None:
    broker = RedisProcess(_free_port(), tmp_path)
    platform = Platform(tmp_path / "home", postgres_url, f"redis://127.0.0.1:{broker.port}/0")
    try:
        platform.start_api()
        run = platform.submit(SMALL, name="broker-down")["runs"][0]
        time.sleep(2)
        got = platform.client.get_run(run["id"])
        assert got["status"] == "queued"  # stored and waiting; nothing lost
        broker.start()
        platform.start_worker()
        (final,) = platform.wait_finished([run["id"]])
        assert final["status"] == "succeeded", platform.diagnostics()
        assert [s for s, _ in platform.loss_steps(run["id"])] == list(range(1, 21))
    finally:
        platform.stop()
        broker.stop()


@pytest.mark.fault
def test_api_down_mid_run_loses_nothing(pg_platform: Platform) -> None:
    pg_platform.env["REASONLAB_HEARTBEAT_TIMEOUT"] = "60"  # the outage is shorter than the reaper's patience
    spec = {"train": {"steps": 80, "checkpoint_every": 1000, "step_delay": 0.1}}
    pg_platform.start_api()
    pg_platform.start_worker()
    run = pg_platform.submit(spec, name="api-down")["runs"][0]
    rid = run["id"]
    wait_for(lambda: len(pg_platform.loss_steps(rid)) >= 10, 120, "the run to log its first steps")
    pg_platform.stop_api()
    time.sleep(4)  # the worker keeps training and buffering while the API is gone
    pg_platform.start_api()
    (final,) = pg_platform.wait_finished([rid])
    assert final["status"] == "succeeded" and final["attempt"] == 1, pg_platform.diagnostics()
    assert [s for s, _ in pg_platform.loss_steps(rid)] == list(range(1, 81))


def test_cli_submit_and_logs_against_the_platform(shared_embedded_platform: Platform, tmp_path: Path) -> None:
    embedded_platform = shared_embedded_platform
    spec = tmp_path / "spec.yaml"
    spec.write_text("kind: diagnostic\ntrain: {steps: 10}\n")
    env = {**embedded_platform.env, "REASONLAB_TOKEN": embedded_platform.token}
    cli = [str(Path(__file__).resolve().parents[2] / ".venv/bin/reasonlab")]
    out = subprocess.run(
        [*cli, "submit", str(spec), "--wait"], env=env, capture_output=True, text=True, timeout=240
    )
    assert out.returncode == 0, out.stderr
    assert "succeeded" in out.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: diagnostic\ntrain: {lr: -1}\n")
    out = subprocess.run([*cli, "submit", str(bad)], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "spec.train.lr" in out.stderr and "Traceback" not in out.stderr
