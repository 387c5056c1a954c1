"""`reasonlab runs list --where EXPR` and `reasonlab experiments list --where EXPR` against the real API app
(sqlite): the query language from the shell; a bad expression prints its position, never a traceback."""

from __future__ import annotations

from click.testing import CliRunner

from cli.main import main
from tests.cli.conftest import InProcessApi


def _ids(output: str) -> list[int]:
    return [int(line.split()[0]) for line in output.splitlines()[1:] if line.split()]


def test_where_filters_runs_and_experiments(cli_api: InProcessApi) -> None:
    body = {
        "name": "lr sweep",
        "kind": "diagnostic",
        "spec": {},
        "sweep": {"grid": {"train.lr": [0.1, 0.01]}},
    }
    exp = cli_api.http.post("/api/v1/experiments", json=body, headers=cli_api.auth).json()
    other = cli_api.http.post(
        "/api/v1/experiments", json={"name": "other", "kind": "diagnostic", "spec": {}}, headers=cli_api.auth
    ).json()
    by_lr = {r["params"]["train.lr"]: r["id"] for r in exp["runs"]}
    runner = CliRunner()
    listed = runner.invoke(main, ["runs", "list", "--where", "params.train.lr >= 0.05"])
    assert listed.exit_code == 0, listed.output
    assert _ids(listed.output) == [by_lr[0.1]]
    both = runner.invoke(
        main, ["runs", "list", "--where", 'experiment = "lr sweep"', "--sort", "params.train.lr"]
    )
    assert _ids(both.output) == [by_lr[0.1], by_lr[0.01]]
    both = runner.invoke(
        main, ["runs", "list", "--where", 'experiment = "lr sweep"', "--sort", "params.train.lr", "--asc"]
    )
    assert _ids(both.output) == [by_lr[0.01], by_lr[0.1]]
    exps = runner.invoke(main, ["experiments", "list", "--where", 'name contains "sweep"'])
    assert exps.exit_code == 0, exps.output
    assert _ids(exps.output) == [exp["id"]]
    assert _ids(runner.invoke(main, ["experiments", "list", "--where", "runs = 1"]).output) == [other["id"]]


def test_a_bad_expression_prints_the_position(cli_api: InProcessApi) -> None:
    runner = CliRunner()
    bad = runner.invoke(main, ["runs", "list", "--where", "status = 'failed' and name >"])
    assert bad.exit_code == 1
    assert "query.q: position 28: expected a value" in bad.output and "after '>'" in bad.output
    assert "Traceback" not in bad.output
    unknown = runner.invoke(main, ["experiments", "list", "--where", "colour = 1"])
    assert (
        unknown.exit_code == 1
        and "unknown field 'colour' for experiments; the fields are: id" in unknown.output
    )


def test_help_shows_three_examples() -> None:
    # three filters each; the runs list adds its seed groups (--group-by) and the flaky runs (attempt > 1)
    for group, examples in (("runs", 5), ("experiments", 3)):
        text = CliRunner().invoke(main, [group, "list", "--help"]).output
        assert "--where EXPR" in text
        assert text.count(f"reasonlab {group} list --where") == examples
