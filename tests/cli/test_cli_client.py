"""The client commands as a user meets them: where the server is, what a refusal or an outage says."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

import cli.client as cli_client
from cli.main import main
from worker.client import ReasonLabClient


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("REASONLAB_API_URL", "REASONLAB_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(cli_client, "CONFIG_FILE", tmp_path / "no-config.yaml")
    home = tmp_path / "home"
    home.mkdir()
    (home / "admin.token").write_text("rl_token\n")
    monkeypatch.setenv("REASONLAB_HOME", str(home))
    return home


def test_a_connection_error_names_the_url_its_source_and_what_to_check(home: Path) -> None:
    url = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    (home / "api.url").write_text(url + "\n")
    result = CliRunner().invoke(main, ["runs", "list"])
    assert result.exit_code == 1
    assert f"cannot reach the ReasonLab API at {url} (from {home / 'api.url'})" in result.output
    assert "reasonlab up" in result.output and "Traceback" not in result.output


def test_the_url_comes_from_the_flag_then_the_environment_then_the_home(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (home / "api.url").write_text("http://127.0.0.1:8080\n")
    assert cli_client.server_url(None, {}) == ("http://127.0.0.1:8080", str(home / "api.url"))
    monkeypatch.setenv("REASONLAB_API_URL", "http://api:9000")
    assert cli_client.server_url(None, {}) == ("http://api:9000", "REASONLAB_API_URL")
    assert cli_client.server_url("http://x:1", {})[0] == "http://x:1"
    (home / "api.url").unlink()
    monkeypatch.delenv("REASONLAB_API_URL")
    assert cli_client.server_url(None, {}) == (cli_client.DEFAULT_URL, "the default")


def test_a_422_lists_each_error_once(home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        errors: list[dict[str, Any]] = [
            {"loc": ["body", "spec", "train", "lr"], "msg": "Input should be greater than 0", "type": "gt"},
            {
                "loc": ["body", "spec", "train", "steps"],
                "msg": "Input should be a valid integer",
                "type": "int",
            },
        ]
        detail = "body.spec.train.lr: Input should be greater than 0"
        return httpx.Response(422, json={"detail": detail, "code": "invalid", "errors": errors})

    monkeypatch.setattr(
        cli_client,
        "_client",
        lambda *_: ReasonLabClient("http://api.test", "t", transport=httpx.MockTransport(refuse)),
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: x\nkind: diagnostic\nspec: {train: {lr: -1, steps: x}}\n")
    result = CliRunner().invoke(main, ["submit", str(spec)])
    assert result.exit_code == 1
    assert result.output.count("Input should be greater than 0") == 1
    assert "body.spec.train.steps: Input should be a valid integer" in result.output


def test_every_command_has_help_text() -> None:
    import click

    def walk(command: click.Command, path: str) -> list[str]:
        missing = [] if (command.help or "").strip() else [path]
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                missing += walk(sub, f"{path} {name}")
        return missing

    assert walk(main, "reasonlab") == []


def test_a_local_run_writes_under_the_home_not_the_working_tree(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "tiny.yaml"
    spec.write_text("name: tiny\nkind: diagnostic\nspec: {train: {steps: 3, checkpoint_every: 3}}\n")
    result = CliRunner().invoke(main, ["run", str(spec), "--no-mlflow"])
    assert result.exit_code == 0, result.output
    assert (home / "runs" / "tiny" / "metrics.jsonl").is_file()
    assert not (tmp_path / "runs").exists()
