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
from reasonlab_sdk.client import ReasonLabClient


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


def test_no_token_names_reasonlab_home_the_token_file_and_the_fix(
    home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Run from a folder that is not the home of `reasonlab up`: the one line says where it looked."""
    (home / "admin.token").unlink()
    result = CliRunner().invoke(main, ["runs", "list"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("Error: no API token")
    assert f"REASONLAB_HOME={home}" in line and str(home / "admin.token") in line
    assert "REASONLAB_TOKEN" in line and "--token" in line and "set REASONLAB_HOME to" in line
    monkeypatch.delenv("REASONLAB_HOME")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["runs", "list"])
    assert "REASONLAB_HOME unset" in result.output
    assert str(tmp_path / ".reasonlab" / "admin.token") in result.output


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


# `submit --wait`: the exit status tells how the runs ended, and an API restart is waited out


def _run(rid: int, status: str, error: str | None = None) -> dict[str, Any]:
    return {"id": rid, "status": status, "error": error, "params": {}, "attempt": 1}


def _fake_api(statuses: Any) -> httpx.MockTransport:
    """POST /experiments answers runs 1 and 2; GET /runs/{id} answers ``statuses(run_id, poll)``: a run
    dict, or an exception/response for an outage. ``poll`` counts that run's GETs from 0."""
    polls: dict[int, int] = {}

    def handle(request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path == "/api/v1/experiments":
            runs = [_run(1, "queued"), _run(2, "queued")]
            return httpx.Response(201, json={"id": 7, "name": "x", "runs": runs})
        rid = int(request.url.path.rsplit("/", 1)[1])
        poll = polls[rid] = polls.get(rid, -1) + 1
        answer = statuses(rid, poll)
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, httpx.Response):
            return answer
        return httpx.Response(200, json=answer)

    return httpx.MockTransport(handle)


@pytest.fixture
def submit_wait(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Any:  # (statuses, *args) -> (result, slept)
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: x\nkind: diagnostic\nspec: {}\n")
    slept: list[float] = []
    clock = [0.0]

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock[0] += seconds

    monkeypatch.setattr(cli_client, "_sleep", sleep)
    monkeypatch.setattr(cli_client, "_now", lambda: clock[0])

    def invoke(statuses: Any, *args: str) -> tuple[Any, list[float]]:
        transport = _fake_api(statuses)
        monkeypatch.setattr(
            cli_client, "_client", lambda *_: ReasonLabClient("http://api.test", "t", transport=transport)
        )
        return CliRunner().invoke(main, ["submit", str(spec), "--wait", *args]), slept

    return invoke


TRACEBACK = 'Traceback (most recent call last):\n  File "x.py", line 1, in run\nValueError: lr too big\n'


def test_submit_wait_exits_0_when_every_run_succeeded(submit_wait: Any) -> None:
    result, _ = submit_wait(lambda rid, poll: _run(rid, "running" if poll < 2 else "succeeded"))
    assert result.exit_code == 0, result.output
    assert "run 1: succeeded" in result.output and "2 run(s): 2 succeeded" in result.output


def test_submit_wait_asks_about_a_large_sweep_less_often(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """20 unfinished runs: a pause of 4 s between two looks (5 runs a second), 1 s again once few are
    left; every run is still reported."""
    slept: list[float] = []
    monkeypatch.setattr(cli_client, "_sleep", slept.append)
    polls: dict[int, int] = {}

    def handle(request: httpx.Request) -> httpx.Response:
        rid = int(request.url.path.rsplit("/", 1)[1])
        polls[rid] = polls.get(rid, 0) + 1
        done = polls[rid] > (1 if rid <= 17 else 3)  # 17 end after one look, 3 after three
        return httpx.Response(200, json=_run(rid, "succeeded" if done else "running"))

    client = ReasonLabClient("http://api.test", "t", transport=httpx.MockTransport(handle))
    assert cli_client._wait_all(client, list(range(1, 21))) == 0
    assert slept == [4.0, 1.0, 1.0]
    assert all(polls[r] == 2 for r in range(1, 18)) and all(polls[r] == 4 for r in range(18, 21))


def test_submit_wait_exits_2_when_a_run_failed_and_says_why(submit_wait: Any) -> None:
    def statuses(rid: int, poll: int) -> dict[str, Any]:
        if rid == 1:
            return _run(1, "failed", TRACEBACK) if poll else _run(1, "running")
        return _run(2, "cancelled" if poll > 1 else "running")

    result, _ = submit_wait(statuses)
    assert result.exit_code == 2, result.output  # failed wins over cancelled
    assert "2 run(s): 1 failed, 1 cancelled" in result.output
    assert "  run 1 failed: ValueError: lr too big" in result.output
    assert "  run 2 cancelled" in result.output


def test_submit_wait_exits_3_when_a_run_was_cancelled(submit_wait: Any) -> None:
    result, _ = submit_wait(lambda rid, poll: _run(rid, "cancelled" if rid == 2 else "succeeded"))
    assert result.exit_code == 3, result.output
    assert "  run 2 cancelled" in result.output and "run 1 " not in result.output.split("run(s):")[1]


def test_submit_wait_waits_out_an_api_restart(submit_wait: Any) -> None:
    """Refused connections, then a proxy's 502 and 503 while the API starts: the wait goes on, with
    backoff and a line on stderr, and ends with the runs' real outcome."""

    requests = iter(range(1000))

    def statuses(rid: int, poll: int) -> Any:
        n = next(requests)  # the API's answers in order, whichever run they are about
        if n < 2:
            return _run(rid, "running")
        if n < 5:
            return httpx.ConnectError("[Errno 111] Connection refused")
        if n < 7:
            return httpx.Response(502 if n == 5 else 503, text="Bad Gateway")
        return _run(rid, "succeeded")

    result, slept = submit_wait(statuses)
    assert result.exit_code == 0, result.output
    assert result.output.count("API unavailable, retrying... (") == 1  # once per outage
    assert "Connection refused" in result.output
    assert result.output.index("API reachable again") < result.output.index("run 1: succeeded")
    assert "2 run(s): 2 succeeded" in result.output
    assert slept[1:6] == [1.0, 2.0, 4.0, 8.0, 16.0]  # backoff while it is down, the poll interval after


def test_submit_wait_timeout_exits_4_with_the_unfinished_runs(submit_wait: Any) -> None:
    def statuses(rid: int, poll: int) -> Any:
        return _run(1, "succeeded") if rid == 1 else httpx.ConnectError("Connection refused")

    result, slept = submit_wait(statuses, "--wait-timeout", "60")
    assert result.exit_code == 4, result.output
    assert "2 run(s): 1 succeeded, 1 unfinished" in result.output
    assert "unfinished at --wait-timeout: run(s) 2" in result.output
    assert sum(slept) == pytest.approx(60)
    assert slept == [1.0, 2.0, 4.0, 8.0, 16.0, 29.0]  # backoff, the last sleep cut at the deadline


def test_a_long_outage_says_so_every_few_minutes(submit_wait: Any) -> None:
    result, _ = submit_wait(lambda rid, poll: httpx.ConnectError("refused"), "--wait-timeout", "3600")
    assert result.exit_code == 4
    assert result.output.count("API unavailable, retrying...") == 1
    assert 10 <= result.output.count("API still unavailable after") <= 12


def test_submit_wait_stops_at_an_error_that_waiting_will_not_fix(submit_wait: Any) -> None:
    result, _ = submit_wait(lambda rid, poll: httpx.Response(401, json={"detail": "token revoked"}))
    assert result.exit_code == 1 and "token revoked" in result.output and "Traceback" not in result.output


def test_submit_usage_errors_exit_1_not_2_which_means_a_run_failed(submit_wait: Any) -> None:
    result, _ = submit_wait(lambda rid, poll: _run(rid, "succeeded"), "--wait-timeout", "soon")
    assert result.exit_code == 1 and "--wait-timeout" in result.output
    assert CliRunner().invoke(main, ["submit"]).exit_code == 1
    assert CliRunner().invoke(main, ["submit", "--help"]).exit_code == 0


def test_error_line_is_the_exception_of_a_traceback_or_the_first_line() -> None:
    assert cli_client.error_line(TRACEBACK) == "ValueError: lr too big"
    assert cli_client.error_line("worker w1 lost (no heartbeat)\nmore") == "worker w1 lost (no heartbeat)"
    assert cli_client.error_line(None) == "" and len(cli_client.error_line("x" * 1000)) == 300
