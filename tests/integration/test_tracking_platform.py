"""A script's run against a real API (uvicorn, SQLite): the API killed and restarted mid-run costs nothing
(every point logged arrives exactly once), and a script killed with -9 is failed as crashed after the
heartbeat window (4 s here) and resumed by id with ``resume="must"`` (reasonlab_sdk/tracking.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

import reasonlab_sdk as rl
from tests.integration.platform import Platform, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.fault]


@pytest.fixture(autouse=True)
def _runs_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REASONLAB_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("REASONLAB_HEARTBEAT_INTERVAL", "0.5")
    return tmp_path / "runs"


def _series(platform: Platform, run_id: int, key: str) -> dict[str, Any]:
    got: dict[str, Any] = platform.client.get_metrics(run_id, [key], max_points=10_000)
    return dict(got["series"][key])


def test_the_api_killed_and_restarted_mid_run_loses_and_duplicates_nothing(
    embedded_platform: Platform,
) -> None:
    platform = embedded_platform
    platform.start_api()
    run = rl.init(experiment="restart", api_url=platform.api_url, token=platform.token)
    for step in range(100):
        run.log({"loss": 1.0 / (step + 1)})
    wait_for(lambda: _series(platform, run.id, "loss")["total_points"] == 100, 30, "the first 100 points")
    platform.kill9_api()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(100, 300):
            run.log({"loss": 1.0 / (step + 1)})
        wait_for(lambda: any("unreachable" in str(w.message) for w in caught), 30, "the SDK's warning")
        platform.start_api()
        assert run.finish(timeout=60) == 0
    series = _series(platform, run.id, "loss")
    assert series["total_points"] == 300
    assert [b["step_start"] for b in series["buckets"]] == list(range(300))
    assert platform.client.get_run(run.id)["status"] == "succeeded"


SCRIPT = textwrap.dedent(
    """
    import sys, time
    import reasonlab_sdk as rl
    run = rl.init(experiment="killed", config={"lr": 0.1})
    print(run.id, flush=True)
    for step in range(20):
        run.log({"loss": 1.0 / (step + 1)})
    time.sleep(600)  # killed here
    """
)


def test_a_script_killed_with_9_is_failed_after_the_heartbeat_window_and_resumed(
    embedded_platform: Platform, tmp_path: Path
) -> None:
    platform = embedded_platform
    platform.start_api()
    env = {
        **os.environ,
        "REASONLAB_API_URL": platform.api_url,
        "REASONLAB_TOKEN": platform.token,
        "REASONLAB_DIR": str(tmp_path / "script-runs"),
        "REASONLAB_HEARTBEAT_INTERVAL": "0.5",
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT], env=env, stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        run_id = int(proc.stdout.readline())
        wait_for(lambda: _series(platform, run_id, "loss")["total_points"] == 20, 60, "the script's points")
        assert platform.client.get_run(run_id)["status"] == "running"  # its heartbeats keep it so
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    crashed = wait_for(
        lambda: (r := platform.client.get_run(run_id))["status"] != "running" and r, 30, "the reaper"
    )
    assert crashed["status"] == "failed" and crashed["error"] == "crashed: no heartbeat for 4 s"
    assert crashed["attempt"] == 1  # never requeued
    back = rl.init(id=run_id, resume="must", api_url=platform.api_url, token=platform.token)
    assert back.attempt == 2
    back.log({"loss": 0.01})  # step 20: after the crashed attempt's last
    assert back.finish(timeout=30) == 0
    series = _series(platform, run_id, "loss")
    assert [b["step_start"] for b in series["buckets"]] == list(range(21))
    assert platform.client.get_run(run_id)["status"] == "succeeded"
