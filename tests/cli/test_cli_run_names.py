"""`reasonlab runs rename RUN NAME` and the name column of `reasonlab runs list`, against the real API app
(sqlite): a user names a run from the shell, sees it listed, clears it; bad input is one line, no traceback."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from cli.main import main
from tests.cli.conftest import InProcessApi


@pytest.fixture
def run_id(cli_api: InProcessApi) -> int:
    """A queued run of the real API app, the CLI pointed at that app."""
    body = {"name": "exp", "kind": "diagnostic", "spec": {}}
    exp = cli_api.http.post("/api/v1/experiments", json=body, headers=cli_api.auth)
    assert exp.status_code == 201, exp.text
    return int(exp.json()["runs"][0]["id"])


def _row(output: str, run_id: int) -> str:
    (row,) = [line for line in output.splitlines() if line.split()[:1] == [str(run_id)]]
    return row


def test_rename_then_list_shows_the_name_and_an_empty_name_clears_it(run_id: int) -> None:
    runner = CliRunner()
    listed = runner.invoke(main, ["runs", "list"])
    assert listed.exit_code == 0, listed.output
    assert "name" in listed.output.splitlines()[0]
    assert "  -  " in _row(listed.output, run_id)  # unnamed

    named = runner.invoke(main, ["runs", "rename", str(run_id), "  lr sweep baseline "])
    assert named.exit_code == 0, named.output
    assert named.output.strip() == f"run {run_id}: named 'lr sweep baseline'"
    assert "lr sweep baseline" in _row(runner.invoke(main, ["runs", "list"]).output, run_id)
    shown = runner.invoke(main, ["runs", "show", str(run_id)]).output
    assert shown.startswith(f"run {run_id} 'lr sweep baseline': ")
    assert (
        '"name": "lr sweep baseline"' in runner.invoke(main, ["runs", "show", str(run_id), "--json"]).output
    )

    long = "a fairly long run name that will not fit"
    assert runner.invoke(main, ["runs", "rename", str(run_id), long]).exit_code == 0
    assert "a fairly long run name …" in _row(runner.invoke(main, ["runs", "list"]).output, run_id)

    cleared = runner.invoke(main, ["runs", "rename", str(run_id), ""])
    assert cleared.exit_code == 0 and cleared.output.strip() == f"run {run_id}: name cleared"
    assert "  -  " in _row(runner.invoke(main, ["runs", "list"]).output, run_id)


def test_a_bad_name_or_run_is_one_clear_error(run_id: int) -> None:
    runner = CliRunner()
    too_long = runner.invoke(main, ["runs", "rename", str(run_id), "x" * 201])
    assert too_long.exit_code == 1 and "Traceback" not in too_long.output
    assert "body.name: " in too_long.output and "200" in too_long.output
    missing = runner.invoke(main, ["runs", "rename", "999999", "x"])
    assert missing.exit_code == 1 and "Traceback" not in missing.output
    assert missing.output.strip() == "Error: 404 run 999999 not found"
