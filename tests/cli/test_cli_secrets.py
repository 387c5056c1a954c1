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


def test_hosts_are_set_with_the_value_or_alone(cli_api: InProcessApi) -> None:
    """A secret is sent only to its hosts. Set without any, it goes nowhere (and says so);
    ``--host`` sets them with the value, ``secrets hosts`` alone, a bad one is the API's 422, no traceback."""
    runner = CliRunner()
    result = runner.invoke(main, ["secrets", "set", "GRADER_KEY", "--from-stdin"], input=VALUE + "\n")
    assert result.exit_code == 0 and "nowhere yet" in result.output, result.output
    result = runner.invoke(
        main,
        [
            "secrets",
            "set",
            "GRADER_KEY",
            "--from-stdin",
            "--host",
            "api.openai.com",
            "--host",
            "*.example.com",
        ],
        input=VALUE + "\n",
    )
    assert result.exit_code == 0 and "sent only to api.openai.com, *.example.com" in result.output, (
        result.output
    )
    listed = runner.invoke(main, ["secrets", "list"]).output
    assert "sent only to api.openai.com, *.example.com" in listed and VALUE not in listed
    result = runner.invoke(main, ["secrets", "hosts", "GRADER_KEY", "--host", "https://llm.internal:8443/v1"])
    assert result.exit_code == 0 and "sent only to https://llm.internal:8443/v1" in result.output, (
        result.output
    )
    # replacing the value without --host keeps them
    runner.invoke(main, ["secrets", "set", "GRADER_KEY", "--from-stdin"], input="sk-rotated\n")
    assert "sent only to https://llm.internal:8443/v1" in runner.invoke(main, ["secrets", "list"]).output
    bad = runner.invoke(main, ["secrets", "hosts", "GRADER_KEY", "--host", "ftp://x"])
    assert bad.exit_code == 1 and "hosts.0" in bad.output and "Traceback" not in bad.output, bad.output


def test_keygen_prints_a_usable_key() -> None:
    from backend.secrets.crypto import derive_key

    out = CliRunner().invoke(main, ["secrets", "keygen"]).output.strip()
    assert len(derive_key(out, "unused")) == 32
