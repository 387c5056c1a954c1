"""The executor against an in-memory API (tests/worker/worker_fake_api.py): claim, heartbeat, cancel,
lease loss, failure with traceback, API outages mid-run, attempts that resume, and no MLflow anywhere (the
API mirrors runs to MLflow: tests/backend/test_mirror.py)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from common.runs import FINISHED_STATUSES
from common.settings import SharedSettings
from tests.worker.worker_fake_api import FakeApi, _error
from worker.executor import execute
from worker.tracking import WriterOptions

FAST = WriterOptions(flush_interval=0.05, backoff_initial=0.01, backoff_max=0.05)


def _spec(**train: Any) -> dict[str, Any]:
    return {
        "seed": 5,
        "data": {"n_samples": 64, "n_features": 4},
        "model": {"hidden": 8, "layers": 1},
        "train": {"steps": 24, "batch_size": 16, "checkpoint_every": 6, **train},
    }


@pytest.fixture
def settings(tmp_path: Path) -> SharedSettings:
    return SharedSettings(home=tmp_path / "home", heartbeat_interval=0.05)


def _execute(api: FakeApi, settings: SharedSettings, attempt: int = 1, **kwargs: Any) -> str:
    return execute(
        api.run["id"], attempt, settings, client=api.client(), writer_options=FAST, worker="w:1", **kwargs
    )


def _loss_steps(api: FakeApi) -> list[int]:
    return sorted(step for key, step in api.metrics if key == "loss")


def test_execute_runs_the_kind_and_reports_everything(settings: SharedSettings) -> None:
    api = FakeApi(spec=_spec())
    assert _execute(api, settings) == "succeeded"
    assert _loss_steps(api) == list(range(1, 25))
    assert [r["kind"] for r in api.results] == ["diagnostic"]
    assert api.finishes == [
        {"attempt": 1, "status": "succeeded", "progress": {"done": 24, "total": 24, "message": "done"}}
    ]
    assert any("final loss" in line for line in api.logs)  # python logging of the kind became log lines
    ckpt = Path(settings.artifact_root) / "checkpoints" / f"run-{api.run['id']}"
    assert sorted(p.name for p in ckpt.iterdir()) == ["step-18.pt", "step-24.pt"]


def test_second_delivery_of_a_claimed_attempt_does_not_run(settings: SharedSettings) -> None:
    api = FakeApi(spec=_spec())
    api.run["status"] = "running"  # another worker has it
    assert _execute(api, settings) == "skipped"
    assert api.requests == ["POST /runs/7/claim"]


def test_stale_attempt_is_skipped(settings: SharedSettings) -> None:
    api = FakeApi(spec=_spec())
    api.run["attempt"] = 2
    assert _execute(api, settings, attempt=1) == "skipped"
    assert not api.finishes


def test_failure_finishes_failed_with_the_traceback(settings: SharedSettings) -> None:
    api = FakeApi(spec=_spec(fail_at_step=10))
    assert _execute(api, settings) == "failed"
    (finish,) = api.finishes
    assert finish["status"] == "failed"
    assert "Traceback" in finish["error"] and "DiagnosticFailure: fail_at_step=10" in finish["error"]
    assert _loss_steps(api) == list(range(1, 10))
    assert any("DiagnosticFailure" in line for line in api.logs)


def test_invalid_spec_fails_the_run(settings: SharedSettings) -> None:
    api = FakeApi(spec={"train": {"steps": -1}})
    assert _execute(api, settings) == "failed"
    assert "ValidationError" in api.finishes[0]["error"]


def test_cancel_requested_stops_the_kind_and_finishes_cancelled(settings: SharedSettings) -> None:
    api = FakeApi(spec=_spec(steps=100_000, step_delay=0.002))
    api.run["cancel_requested"] = True  # seen by the first heartbeat
    assert _execute(api, settings) == "cancelled"
    assert api.finishes[0]["status"] == "cancelled"
    assert len(_loss_steps(api)) < 100_000


def test_lost_lease_stops_without_finishing(settings: SharedSettings) -> None:
    api = FakeApi(spec=_spec(steps=100_000, step_delay=0.002))
    api.lease_lost = True  # the reaper gave the run to another attempt
    assert _execute(api, settings) == "lost"
    assert api.finishes == []


class FinishBeforeBeat(FakeApi):
    """The API as it is when the heartbeat thread's beat and the finish are in flight together: the finish
    lands first, the beat finds the run finished (409, as backend/runs/service.py words it), and the
    finish's answer reaches the executor only after that beat was refused."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.beat_refused = threading.Event()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/api/v1")
        status = self.run["status"]
        if path.endswith("/heartbeat") and status in FINISHED_STATUSES:
            self.beat_refused.set()
            attempt = self.run["attempt"]
            return _error(
                409, "conflict", f"attempt {attempt} no longer owns run 7 (it is {status}, attempt {attempt})"
            )
        response = super().__call__(request)
        if path.endswith("/finish") and response.status_code == 200:
            assert self.beat_refused.wait(10), "no beat reached the finished run"
        return response


def test_a_beat_refused_after_the_finish_is_no_lost_lease(
    settings: SharedSettings, caplog: pytest.LogCaptureFixture
) -> None:
    """A succeeded run logged "lost its lease (409 ... it is succeeded)" at ERROR: its last beat raced its
    own finish. That beat is expected and quiet; the run finishes succeeded once."""
    api = FinishBeforeBeat(spec=_spec())
    with caplog.at_level(logging.INFO, logger="worker"):
        assert _execute(api, settings) == "succeeded"
    assert api.beat_refused.is_set()
    assert [f["status"] for f in api.finishes] == ["succeeded"]
    noisy = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert noisy == [], noisy


def test_api_outage_mid_run_loses_no_point(settings: SharedSettings) -> None:
    api = FakeApi(spec=_spec(steps=60, step_delay=0.002))
    api.fail_metric_posts = 4
    api.unreachable_metric_posts = 4
    assert _execute(api, settings) == "succeeded"
    assert _loss_steps(api) == list(range(1, 61))
    assert api.unreachable_metric_posts == 0 and api.fail_metric_posts == 0


def test_second_attempt_resumes_from_the_checkpoint(settings: SharedSettings) -> None:
    """A failed attempt retried: the next one resumes from the last checkpoint; neither tells the API an
    MLflow run (the API's mirror owns runs.mlflow_run_id)."""
    api = FakeApi(spec=_spec(fail_at_step=16))
    assert _execute(api, settings) == "failed"
    api.requeue(attempt=2)  # what POST /runs/{id}/retry does
    assert _execute(api, settings, attempt=2) == "succeeded"
    assert api.finishes[-1] == {
        "attempt": 2,
        "status": "succeeded",
        "progress": {"done": 24, "total": 24, "message": "done"},
    }
    assert api.results[-1]["payload"]["resumed_from_step"] == 12
    assert _loss_steps(api) == list(range(1, 25))
    assert api.patches == [] and all("mlflow_run_id" not in f for f in api.finishes)


def test_an_attempt_tells_the_api_once_that_it_resumed(settings: SharedSettings) -> None:
    """Only the worker knows an attempt resumed: its run context posts the checkpoint
    step load_checkpoint() found, once, so the run's log, the activity feed and the attempt history show
    it; the first attempt, which found none, posts nothing."""
    api = FakeApi(spec=_spec(fail_at_step=16))
    assert _execute(api, settings) == "failed"
    assert api.resumed == []
    api.requeue(attempt=2)
    assert _execute(api, settings, attempt=2) == "succeeded"
    assert api.resumed == [{"attempt": 2, "step": 12}]


@pytest.mark.heavy
def test_the_worker_never_loads_mlflow(tmp_path: Path) -> None:
    """A worker host needs no MLflow URL: neither the settings nor the executor's modules know MLflow."""
    import subprocess
    import sys

    assert not any("mlflow" in name for name in SharedSettings.model_fields)
    code = (
        "import sys; import worker.executor, worker.tasks, worker.tracking.tracked; "
        "sys.exit(1 if any(m == 'mlflow' or m.startswith('mlflow.') for m in sys.modules) else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[2]).returncode == 0


def test_a_run_claimed_as_the_worker_shuts_down_is_given_back_at_once(
    settings: SharedSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shutdown signal came after the task's check but before the run's own handler: the run stops at
    its first step check, checkpoints and is released, instead of running until the worker is killed."""
    from worker import executor

    monkeypatch.setattr(executor, "_shutting_down", True)
    api = FakeApi(spec=_spec(steps=400, step_delay=0.01))
    assert _execute(api, settings) == "released"
    assert (api.run["status"], api.run["attempt"], api.run["released"], api.run["max_attempts"]) == (
        "queued",
        2,
        1,
        3,
    )
    assert _loss_steps(api) == [] and api.finishes == []


@pytest.mark.heavy
def test_shutdown_signal_checkpoints_and_gives_the_run_back(settings: SharedSettings) -> None:
    import os
    import threading

    from worker.executor import INTERRUPT_SIGNAL

    api = FakeApi(spec=_spec(steps=400, step_delay=0.01))
    timer = threading.Timer(0.8, lambda: os.kill(os.getpid(), INTERRUPT_SIGNAL))  # the worker shuts down
    timer.start()
    try:
        assert _execute(api, settings) == "released"
    finally:
        timer.cancel()
    assert api.finishes == []
    assert (api.run["status"], api.run["attempt"], api.run["released"], api.run["max_attempts"]) == (
        "queued",
        2,
        1,
        3,
    )
    stopped_at = len(_loss_steps(api))
    assert 0 < stopped_at < 400
    # the next worker resumes from the checkpoint written at the stop and finishes the run
    assert _execute(api, settings, attempt=2) == "succeeded"
    assert _loss_steps(api) == list(range(1, 401))


def test_an_attempt_on_another_host_resumes_from_the_stored_checkpoint(tmp_path: Path) -> None:
    """Two hosts, no shared volume: attempt 1 on host A stores its checkpoints through the API; attempt 2
    on host B (an empty artifact root) downloads the newest and resumes from it, not from step 0."""
    host_a = SharedSettings(home=tmp_path / "a", heartbeat_interval=0.05)
    host_b = SharedSettings(home=tmp_path / "b", heartbeat_interval=0.05)
    api = FakeApi(spec=_spec(fail_at_step=16))
    assert _execute(api, host_a) == "failed"
    rid = api.run["id"]
    # its checkpoints (the newest two, steps 6 and 12) are in the store
    assert sorted(p for r, p in api.artifacts if r == rid) == [
        "checkpoints/step-12.pt",
        "checkpoints/step-6.pt",
    ]
    assert not (Path(host_b.artifact_root) / "checkpoints").exists()

    api.requeue(attempt=2)
    assert _execute(api, host_b, attempt=2) == "succeeded"
    assert api.results[-1]["payload"]["resumed_from_step"] == 12
    assert _loss_steps(api) == list(range(1, 25))
    stored = sorted(p for r, p in api.artifacts if r == rid)
    assert stored == ["checkpoints/step-18.pt", "checkpoints/step-24.pt", "model/step-24.pt"]
    local = Path(host_b.artifact_root) / "checkpoints" / f"run-{rid}" / "step-24.pt"
    assert api.artifacts[(rid, "model/step-24.pt")] == local.read_bytes()

    # the same spec uninterrupted ends on the same loss, bit for bit
    twin = FakeApi(run_id=8, spec=_spec())
    assert _execute(twin, SharedSettings(home=tmp_path / "c", heartbeat_interval=0.05)) == "succeeded"
    assert twin.metrics["loss", 24] == api.metrics["loss", 24]


def test_outputs_of_a_succeeded_run_are_stored_and_another_run_reads_them(tmp_path: Path) -> None:
    from worker.tracking.tracked import ApiRunContext

    source = FakeApi(run_id=5)
    source.run.update(status="running")
    with source.run_client() as client:
        ctx = ApiRunContext(client, 5, 1, seed=0, device="cpu", artifact_root=tmp_path / "a", options=FAST)
        (ctx.out_dir / "model").mkdir()
        (ctx.out_dir / "model" / "config.json").write_text('{"d": 8}')
        ctx.save_checkpoint({"w": 1}, 3)
        ctx.close("succeeded")
    assert sorted(p for _, p in source.artifacts) == [
        "checkpoints/step-3.pt",
        "model/step-3.pt",
        "outputs/model/config.json",
    ]

    reader = FakeApi(run_id=6)
    reader.artifacts.update(source.artifacts)  # one store behind one API
    with reader.run_client() as client:
        ctx = ApiRunContext(client, 6, 1, seed=0, device="cpu", artifact_root=tmp_path / "b", options=FAST)
        outputs = ctx.run_outputs(5)
        ctx.close("failed")
    assert outputs == tmp_path / "b" / "runs" / "run-5"
    assert (outputs / "model" / "config.json").read_text() == '{"d": 8}'


# -- a cancel stops a run in any phase ------------------------------------------------------------------


def test_a_cancel_during_setup_never_starts_the_kind(
    settings: SharedSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cancel came while the job was still setting up (here: a kind slow to import): the kind never
    runs, the run finishes cancelled."""
    import time

    from worker import executor

    api = FakeApi(spec=_spec(steps=100_000, step_delay=0.002))
    real = executor.get_kind
    started: list[str] = []

    def slow_import(name: str) -> Any:
        with api.lock:
            api.run["cancel_requested"] = True  # the user cancels right after the claim
        time.sleep(0.5)  # several heartbeats
        kind = real(name)

        def run(spec: Any, ctx: Any) -> None:
            started.append(name)
            kind.run(spec, ctx)

        return SimpleNamespace(spec=kind.spec, run=run)

    monkeypatch.setattr(executor, "get_kind", slow_import)
    assert _execute(api, settings) == "cancelled"
    assert started == [] and _loss_steps(api) == []
    assert api.finishes[0]["status"] == "cancelled"


def test_a_cancel_while_outputs_are_stored_ends_the_run_cancelled(settings: SharedSettings) -> None:
    """The kind was done and its outputs were going up when the cancel came: the remaining files are not
    sent and the run finishes cancelled, at once, instead of succeeding after the whole upload."""
    import time

    class CancelOnUpload(FakeApi):
        def _artifacts(self, request: Any, path: str) -> Any:
            if request.method == "PUT" and "/artifacts/outputs/" in path and not self.run["cancel_requested"]:
                with self.lock:
                    self.run["cancel_requested"] = True
                time.sleep(0.5)  # the heartbeat sees the cancel while this file goes up
            return super()._artifacts(request, path)

    api = CancelOnUpload(spec=_spec())
    out_dir = Path(settings.artifact_root) / "runs" / f"run-{api.run['id']}"
    out_dir.mkdir(parents=True)
    for name in ("a.txt", "b.txt", "c.txt"):
        (out_dir / name).write_text(name)
    assert _execute(api, settings) == "cancelled"
    assert api.finishes[-1]["status"] == "cancelled"
    stored = sorted(p for _, p in api.artifacts if not p.startswith("checkpoints/"))
    assert stored == ["outputs/a.txt"], stored  # neither the other outputs nor a final model
    assert _loss_steps(api) == list(range(1, 25))  # every point still flushed before the finish


def test_a_cancel_ends_downloads_but_never_the_checkpoint_upload(tmp_path: Path) -> None:
    """Transfers before the kind's loop stop on a cancel; the checkpoint a kind writes when cancelled is
    still stored (a retry resumes from it)."""
    from worker.tracking.artifacts import RunArtifacts, TransferCancelled

    api = FakeApi(run_id=5)
    api.run.update(status="running")
    api.artifacts[(5, "outputs/x.txt")] = b"x"
    cancelled = [True]
    local = tmp_path / "step-3.pt"
    local.write_bytes(b"state")
    with api.run_client() as client:
        artifacts = RunArtifacts(client, 5, 1, stop=lambda: cancelled[0])
        with pytest.raises(TransferCancelled):
            artifacts.pull_outputs(5, tmp_path / "out")
        artifacts.push_checkpoint(local, 3, keep=2)
    assert api.artifacts[(5, "checkpoints/step-3.pt")] == b"state"
    assert not (tmp_path / "out").exists()
