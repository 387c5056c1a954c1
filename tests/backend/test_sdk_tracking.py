"""The tracking SDK against the API (in process): a script's run, its points each stored once, a server
that is down for a while, a crashed script's run resumed by id, and its sampled system metrics
(reasonlab_sdk/tracking.py, reasonlab_sdk/sysmetrics.py)."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

import reasonlab_sdk as rl
from backend.db import get_engine, session_factory, session_scope
from backend.runs import service
from reasonlab_sdk import ReasonLabClient, spool
from tests.backend.conftest import Api


class Flaky(httpx.BaseTransport):
    """The app's transport, refusing connections while ``down`` is set (a server restarting)."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner, self.down = inner, threading.Event()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self.down.is_set():
            raise httpx.ConnectError("connection refused", request=request)
        return self.inner.handle_request(request)


@pytest.fixture(autouse=True)
def _runs_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REASONLAB_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("REASONLAB_HEARTBEAT_INTERVAL", "0.2")
    return tmp_path / "runs"


def _app(api: Api) -> httpx.MockTransport:
    """The SDK's requests answered by the test's API (in process)."""

    def forward(request: httpx.Request) -> httpx.Response:
        res = api.client.request(
            request.method,
            request.url.path,
            params=request.url.params,
            headers=dict(request.headers),
            content=request.read(),
        )
        # the test client decoded the body already: its encoding and length headers no longer describe it
        headers = {k: v for k, v in res.headers.items() if k not in ("content-encoding", "content-length")}
        return httpx.Response(res.status_code, content=res.content, headers=headers)

    return httpx.MockTransport(forward)


def _client(api: Api, transport: httpx.BaseTransport | None = None) -> ReasonLabClient:
    return ReasonLabClient("http://testserver", api.admin_token, transport=transport or _app(api))


def _series(api: Api, run_id: int, key: str) -> list[tuple[int, Any]]:
    got = api.client.get(
        f"/api/v1/runs/{run_id}/metrics", params={"keys": key, "max_points": 10_000}, headers=api.h()
    ).json()
    return [(b["step_start"], b["last"]) for b in got["series"][key]["buckets"]]


def test_a_script_logs_and_every_point_arrives_once(api: Api) -> None:
    with rl.init(experiment="sdk", config={"lr": 0.1}, tags=["t"], client=_client(api)) as run:
        for step in range(50):
            run.log({"loss": 1.0 / (step + 1), "eval": {"acc": step / 50}})
        run.log({"loss": float("nan")}, step=60)
        run.log_params({"n_params": 1234})
        run.summary["best"] = 0.9
    got = api.client.get(f"/api/v1/runs/{run.id}", headers=api.h()).json()
    assert got["status"] == "succeeded" and got["kind"] == "external" and got["spec"] == {"lr": 0.1}
    assert [s for s, _ in _series(api, run.id, "loss")] == [*range(50), 60]
    assert _series(api, run.id, "loss")[-1] == (60, None)  # NaN: no number (last_nonfinite says NaN)
    assert [s for s, _ in _series(api, run.id, "eval/acc")] == list(range(50))
    params = api.client.get(f"/api/v1/runs/{run.id}", headers=api.h()).json()["logged_params"]
    assert params["n_params"] == 1234 and params["summary.best"] == 0.9
    provenance = api.client.get(f"/api/v1/runs/{run.id}/provenance", headers=api.h()).json()
    assert provenance["python"] and provenance["packages"]


def test_a_server_that_is_down_costs_a_warning_and_everything_arrives(api: Api) -> None:
    flaky = Flaky(_app(api))
    run = rl.init(experiment="sdk", client=_client(api, flaky))
    run.log({"x": 0})
    flaky.down.set()
    with pytest.warns(UserWarning, match="unreachable"):
        for step in range(1, 200):
            run.log({"x": step})
        time.sleep(1.0)
    records = spool.read(run.spool_path).records
    assert sum(r["t"] == "point" for r in records) == 200  # kept on disk meanwhile
    flaky.down.clear()
    assert run.finish(timeout=30) == 0
    assert [s for s, _ in _series(api, run.id, "x")] == list(range(200))
    assert api.client.get(f"/api/v1/runs/{run.id}", headers=api.h()).json()["status"] == "succeeded"


def test_finish_says_what_is_left_when_the_server_stays_down(api: Api) -> None:
    flaky = Flaky(_app(api))
    run = rl.init(experiment="sdk", client=_client(api, flaky))
    flaky.down.set()
    run.log({"x": 1})
    with pytest.warns(UserWarning, match=r"1 record\(s\).*kept in .*log.jsonl"):
        assert run.finish(timeout=1.5) == 1


def test_a_crashed_script_is_failed_after_the_window_and_resumed_with_must(api: Api) -> None:
    run = rl.init(experiment="sdk", client=_client(api))
    for _ in range(5):
        run.log({"loss": 1.0})
    deadline = time.monotonic() + 20
    while len(_series(api, run.id, "loss")) < 5 and time.monotonic() < deadline:
        time.sleep(0.1)
    run._lost_lease = True  # the script dies: no heartbeat, no finish from here on
    time.sleep(0.5)
    with session_scope(session_factory(get_engine(api.settings.database_url))) as s:
        assert service.reap(s, timeout_seconds=0.3) == [(run.id, "failed")]
    got = api.client.get(f"/api/v1/runs/{run.id}", headers=api.h()).json()
    assert got["status"] == "failed" and got["error"].startswith("crashed: no heartbeat")
    back = rl.init(id=run.id, resume="must", client=_client(api))
    assert back.attempt == 2
    back.log({"loss": 0.5})  # step 5: after the last
    back.finish()
    assert [s for s, _ in _series(api, run.id, "loss")] == list(range(6))
    assert api.client.get(f"/api/v1/runs/{run.id}", headers=api.h()).json()["status"] == "succeeded"


def test_a_script_run_gets_system_metrics_and_resumes_after_its_own_steps(api: Api) -> None:
    run = rl.init(experiment="sdk", client=_client(api), system_metrics_interval=0.1)
    for _ in range(5):
        run.log({"loss": 1.0})
    wanted = {
        "system/cpu_percent",
        "system/memory_percent",
        "system/process_cpu_percent",
        "system/process_memory_mb",
    }
    deadline = time.monotonic() + 30
    keys: set[str] = set()
    while not wanted <= keys and time.monotonic() < deadline:
        time.sleep(0.1)
        keys = set(api.client.get(f"/api/v1/runs/{run.id}/metric-keys", headers=api.h()).json())
    assert wanted <= keys, keys
    created = datetime.fromisoformat(
        api.client.get(f"/api/v1/runs/{run.id}", headers=api.h()).json()["created_at"].replace("Z", "+00:00")
    )
    step, mb = _series(api, run.id, "system/process_memory_mb")[0]
    assert 0 <= step <= time.time() - created.timestamp() + 1  # seconds since the run was created, not a step
    assert mb > 1.0  # this process's resident set
    # a sample of a run created a day ago: its step (seconds) is far past the script's last step (4)
    run._client.post_metrics(run.id, [{"key": "system/cpu_percent", "step": 86_400, "value": 5.0}], attempt=1)
    run.finish()
    back = rl.init(id=run.id, resume="must", client=_client(api))
    back.log({"loss": 0.5})
    back.finish()
    assert [s for s, _ in _series(api, run.id, "loss")] == list(range(6))
