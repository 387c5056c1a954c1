"""`reasonlab secrets`: a project admin sets, lists and deletes project secrets from the shell, against the
real API app (sqlite); the value is read from stdin or a hidden prompt, never printed back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

import cli.client as cli_client
from backend.bootstrap import ensure_admin, migrate
from backend.main import create_app
from cli.main import main
from tests.backend.conftest import make_settings
from worker.client import ReasonLabClient

VALUE = "sk-cli-secret-value-31415"


@pytest.fixture
def cli_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    settings = make_settings(f"sqlite:///{tmp_path / 'db.sqlite'}", tmp_path / "home")
    migrate(settings)
    creds = ensure_admin(settings)
    assert creds is not None
    with TestClient(create_app(settings, background=False)) as http:

        def forward(request: httpx.Request) -> httpx.Response:
            answer = http.request(
                request.method,
                request.url.raw_path.decode(),
                content=request.content,
                headers=request.headers,
            )
            return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)

        transport = httpx.MockTransport(forward)
        monkeypatch.setattr(
            cli_client,
            "_client",
            lambda *_: ReasonLabClient("http://testserver", creds.token, transport=transport),
        )
        yield


def test_set_list_delete_from_the_shell(cli_api: None) -> None:
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
