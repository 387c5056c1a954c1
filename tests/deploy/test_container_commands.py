"""Every command a container runs is a real ``reasonlab`` (or ``mlflow server``) command line: parsed by
the installed click commands, and ``reasonlab <cmd> --help`` runs."""

from __future__ import annotations

import importlib.util
import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click
import pytest

from tests.deploy.conftest import (
    DOCKERFILES,
    ENTRYPOINT,
    SECRETS,
    WORKERS,
    dockerfile_instructions,
    service_env,
)


def _container_commands(config: dict[str, Any]) -> dict[str, list[str]]:
    """Each service's command, and each Dockerfile's CMD, as argv lists."""
    commands = {f"service {n}": list(s["command"]) for n, s in config["services"].items() if s.get("command")}
    for dockerfile in DOCKERFILES:
        for line in dockerfile_instructions(dockerfile):
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
