"""The gpu worker reserves the host's GPUs and each replica claims one; workers get time to stop; the
scale-out file (docker/compose.worker-host.yml) runs the same gpu worker on a second host."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.conftest import REPO, SECRETS, WORKERS, run_compose, service_env

WORKER_HOST_FILE = REPO / "docker" / "compose.worker-host.yml"


def test_gpu_worker_reserves_gpus_and_claims_one(config: dict[str, Any]) -> None:
    worker = config["services"]["worker"]
    devices = worker["deploy"]["resources"]["reservations"]["devices"]
    assert any(d["driver"] == "nvidia" and "gpu" in d["capabilities"] for d in devices)
    lock_dir = service_env(config, "worker")["REASONLAB_GPU_LOCK_DIR"]
    mounts = {v["target"]: v for v in worker["volumes"]}
    assert mounts[lock_dir]["type"] == "volume", "replicas must share the GPU lock folder"
    assert "deploy" not in config["services"]["worker-cpu"]
    assert "REASONLAB_GPU_LOCK_DIR" not in service_env(config, "worker-cpu")
    for name in WORKERS:
        grace = config["services"][name]["stop_grace_period"]
        assert _seconds(grace) >= 60, f"{name}: stop_grace_period {grace} leaves a job no time"


def _seconds(duration: str) -> float:
    total = 0.0
    for number, unit in re.findall(r"([\d.]+)(h|ms|m|s)", duration):
        total += float(number) * {"h": 3600, "m": 60, "s": 1, "ms": 0.001}[unit]
    return total


WORKER_HOST_ENV = {
    "WORKER_API_URL": "http://head.example:8000",
    "BROKER_URL": "redis://head.example:6379/0",
    "REASONLAB_WORKER_TOKEN": SECRETS["REASONLAB_WORKER_TOKEN"],
    "ARTIFACT_ROOT_ON_HOST": "/mnt/reasonlab-artifacts",
}


def test_worker_host_file_runs_the_same_gpu_worker(
    compose: list[str], tmp_path: Path, config: dict[str, Any], clean_env: pytest.MonkeyPatch
) -> None:
    """docker/compose.worker-host.yml (scale-out): the main file's gpu worker, pointed at a head host."""
    out = run_compose(compose, tmp_path, WORKER_HOST_ENV, "config", "--format", "json", file=WORKER_HOST_FILE)
    assert out.returncode == 0, out.stderr
    remote = json.loads(out.stdout)["services"]
    assert set(remote) == {"worker"}
    here, there = config["services"]["worker"], remote["worker"]
    for key in ("command", "deploy", "shm_size", "stop_grace_period", "image", "init"):
        assert here[key] == there[key], key
    assert (
        Path(there["build"]["context"]) == REPO
        and there["build"]["dockerfile"] == here["build"]["dockerfile"]
    )
    env = service_env({"services": remote}, "worker")
    assert set(env) == set(service_env(config, "worker"))
    root = env["REASONLAB_ARTIFACT_ROOT"]
    mount = next(v for v in there["volumes"] if v["target"] == root)
    assert mount["type"] == "bind" and mount["source"] == WORKER_HOST_ENV["ARTIFACT_ROOT_ON_HOST"]
    for key, value in env.items():
        clean_env.setenv(key, value)
    from backend.settings import Settings

    settings = Settings()
    assert settings.api_url == WORKER_HOST_ENV["WORKER_API_URL"]
    assert settings.broker_url == WORKER_HOST_ENV["BROKER_URL"]
    assert not any("MLFLOW" in k for k in env), "a worker host needs no MLflow: the API mirrors runs"
    # the connection settings are required; the local artifact folder is optional (artifacts reach the
    # host through the API, docs/operations.md "Artifacts"), with a default under the project folder
    optional = {"ARTIFACT_ROOT_ON_HOST"}
    for missing in sorted(WORKER_HOST_ENV):
        partial = {k: v for k, v in WORKER_HOST_ENV.items() if k != missing}
        out = run_compose(compose, tmp_path, partial, "config", "--quiet", file=WORKER_HOST_FILE)
        if missing in optional:
            assert out.returncode == 0, out.stderr
            continue
        assert out.returncode != 0 and missing in out.stderr, f"worker host config accepted without {missing}"
