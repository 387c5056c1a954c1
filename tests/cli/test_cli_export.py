"""`reasonlab runs export` (issue 22, item 7): an experiment's runs table as a CSV or Parquet file from
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
