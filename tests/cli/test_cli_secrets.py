"""`reasonlab secrets`: a project admin sets, lists and deletes project secrets from the shell, against the
real API app (sqlite); the value is read from stdin or a hidden prompt, never printed back."""

from __future__ import annotations

from click.testing import CliRunner

from cli.main import main
from tests.cli.conftest import InProcessApi

VALUE = "sk-cli-secret-value-31415"


def test_set_list_delete_from_the_shell(cli_api: InProcessApi) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["secrets", "set", "GRADER_KEY", "--from-stdin"], input=VALUE + "\n")
    assert result.exit_code == 0, result.output
    listed = runner.invoke(main, ["secrets", "list"])
    assert listed.exit_code == 0 and "GRADER_KEY" in listed.output and "admin" in listed.output
    assert VALUE not in result.output + listed.output
    # the hidden prompt asks twice and never echoes
    prompted = runner.invoke(main, ["secrets", "set", "OTHER"], input=f"{VALUE}\n{VALUE}\n")
    assert prompted.exit_code == 0 and VALUE not in prompted.output
    bad = runner.invoke(main, ["secrets", "set", "not a name", "--from-stdin"], input="x\n")
    assert bad.exit_code == 1 and "Traceback" not in bad.output
    assert runner.invoke(main, ["secrets", "delete", "GRADER_KEY"]).exit_code == 0
    assert "GRADER_KEY" not in runner.invoke(main, ["secrets", "list"]).output
    missing = runner.invoke(main, ["secrets", "list", "--project", "nope"])
    assert missing.exit_code == 1 and "project 'nope' not found" in missing.output


def test_keygen_prints_a_usable_key() -> None:
    from backend.secrets.crypto import derive_key

    out = CliRunner().invoke(main, ["secrets", "keygen"]).output.strip()
    assert len(derive_key(out, "unused")) == 32
