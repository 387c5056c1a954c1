"""`reasonlab experiments export` (and `runs export`): an experiment's runs table as a CSV or Parquet file from
the shell, against the real API app (sqlite)."""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from cli import client as cli_client
from cli.main import main
from tests.cli.conftest import InProcessApi


def test_export_csv_and_parquet_from_the_shell(
    cli_api: InProcessApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with cli_client._client(None, None) as client:
        exp = client.create_experiment("lr", "diagnostic", {}, {"grid": {"train.lr": [0.1, 0.01, 0.001]}})
    runner = CliRunner()
    out = tmp_path / "runs.csv"
    result = runner.invoke(main, ["runs", "export", str(exp["id"]), "--format", "csv", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.output
    with out.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["number"] for r in rows] == ["1", "2", "3"]
    assert [float(r["params.train.lr"]) for r in rows] == [0.1, 0.01, 0.001]
    assert {r["status"] for r in rows} == {"queued"}

    monkeypatch.chdir(tmp_path)  # the default file name, in the working folder
    result = runner.invoke(main, ["runs", "export", str(exp["id"]), "--format", "parquet"])
    assert result.exit_code == 0, result.output
    table = pq.read_table(tmp_path / f"experiment-{exp['id']}-runs.parquet")
    assert table.column("number").to_pylist() == [1, 2, 3]

    none = runner.invoke(main, ["runs", "export", str(exp["id"]), "--status", "failed", "-o", str(out)])
    assert none.exit_code == 0, none.output
    assert out.read_text().splitlines()[1:] == []  # the header only


def test_export_errors_are_one_line(cli_api: InProcessApi, tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "exports" / "runs.csv"
    missing = runner.invoke(main, ["runs", "export", "999999", "-o", str(out)])
    assert missing.exit_code == 1 and "Traceback" not in missing.output
    assert "experiment 999999 not found" in missing.output and not out.exists()
    assert list(out.parent.iterdir()) == []  # no partial file left behind
    bad = runner.invoke(main, ["runs", "export", "1", "--format", "xlsx"])
    assert bad.exit_code == 2 and "Invalid value for '--format'" in bad.output
    assert "Traceback" not in bad.output


def test_experiments_export_is_runs_export_under_its_own_name(cli_api: InProcessApi, tmp_path: Path) -> None:
    """The argument is an experiment, so the command lives under `experiments` (and `runs export` stays)."""
    with cli_client._client(None, None) as client:
        exp = client.create_experiment("lr", "diagnostic", {}, {"grid": {"train.lr": [0.1, 0.01]}})
    runner = CliRunner()
    by_runs, by_experiments = tmp_path / "a.csv", tmp_path / "b.csv"
    assert runner.invoke(main, ["runs", "export", str(exp["id"]), "-o", str(by_runs)]).exit_code == 0
    result = runner.invoke(main, ["experiments", "export", str(exp["id"]), "-o", str(by_experiments)])
    assert result.exit_code == 0, result.output
    assert f"wrote {by_experiments}" in result.output
    assert by_experiments.read_text() == by_runs.read_text()
    missing = runner.invoke(main, ["experiments", "export", "999999", "-o", str(tmp_path / "c.csv")])
    assert missing.exit_code == 1 and "experiment 999999 not found" in missing.output


def test_runs_list_columns_and_a_readable_runs_show(cli_api: InProcessApi) -> None:
    with cli_client._client(None, None) as client:
        exp = client.create_experiment(
            "lr", "diagnostic", {"train": {"steps": 7}}, {"grid": {"train.lr": [0.1, 0.01]}}
        )
    runner = CliRunner()
    listed = runner.invoke(
        main, ["runs", "list", "--columns", "params.train.lr,params.train.steps,metrics.loss,status"]
    )
    assert listed.exit_code == 0, listed.output
    header, *rows = listed.output.splitlines()
    assert header.split()[-4:] == ["params.train.lr", "params.train.steps", "metrics.loss", "status"]
    assert "params" not in header.split()[:-4]  # the columns replace the params column
    by_lr = sorted(r.split()[-4:] for r in rows)
    assert by_lr == [["0.01", "7", "-", "queued"], ["0.1", "7", "-", "queued"]]  # no metric yet: "-"

    run_id = exp["runs"][0]["id"]
    shown = runner.invoke(main, ["runs", "show", str(run_id)])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[0] == f"run {run_id}: diagnostic, experiment {exp['id']}, queued"
    assert f"  attempt:   1 of at most {exp['runs'][0]['max_attempts']}" in lines
    assert "params (swept):" in lines and any(line.split() == ["train.lr", "0.1"] for line in lines)
    assert lines[-1] == f"(the resolved spec and every field: reasonlab runs show {run_id} --json)"
    raw = runner.invoke(main, ["runs", "show", str(run_id), "--json"])
    assert raw.exit_code == 0 and '"spec"' in raw.output and raw.output.lstrip().startswith("{")
