"""`reasonlab datasets`: a member uploads, lists and deletes project datasets from the shell, against the
real API app (sqlite)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from click.testing import CliRunner

from cli.main import main
from tests.cli.conftest import InProcessApi

DATA = b"skill,description\nirony,saying the opposite\n"


def test_upload_list_delete_from_the_shell(cli_api: InProcessApi, tmp_path: Path) -> None:
    source = tmp_path / "skills.csv"
    source.write_bytes(DATA)
    runner = CliRunner()
    result = runner.invoke(main, ["datasets", "upload", str(source)])
    assert result.exit_code == 0, result.output
    assert "dataset:skills.csv" in result.output and hashlib.sha256(DATA).hexdigest() in result.output
    renamed = runner.invoke(main, ["datasets", "upload", str(source), "--name", "skills-v2.csv"])
    assert renamed.exit_code == 0, renamed.output
    listed = runner.invoke(main, ["datasets", "list"])
    assert listed.exit_code == 0, listed.output
    assert "skills.csv" in listed.output and "skills-v2.csv" in listed.output and "admin" in listed.output
    bad = runner.invoke(main, ["datasets", "upload", str(source), "--name", "..hidden"])
    assert bad.exit_code != 0 and "name" in bad.output
    deleted = runner.invoke(main, ["datasets", "delete", "skills.csv"])
    assert deleted.exit_code == 0, deleted.output
    listed = runner.invoke(main, ["datasets", "list"])
    assert "skills-v2.csv" in listed.output and "skills.csv " not in listed.output
    missing = runner.invoke(main, ["datasets", "delete", "skills.csv"])
    assert missing.exit_code != 0 and "not found" in missing.output
    other = runner.invoke(main, ["datasets", "list", "--project", "nope"])
    assert other.exit_code != 0 and "not found" in other.output
