"""The CLI against the real API app in this process (SQLite): its client's requests go through an httpx mock
transport to a FastAPI TestClient, so a command runs end to end without a server or a port."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

import cli.client as cli_client
from backend.bootstrap import ensure_admin, migrate
from backend.main import create_app
from reasonlab_sdk.client import ReasonLabClient
from tests.backend.conftest import make_settings


@dataclass(frozen=True)
class InProcessApi:
    http: TestClient  # the app itself, for a test's own set-up requests
    token: str  # the admin's API token, which the CLI's client sends

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture
def cli_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InProcessApi]:
    """Every CLI command of the test talks to a fresh app; answers are passed on decoded (a large JSON
    answer is past the API's gzip threshold, and the TestClient has already decoded it)."""
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
            headers = {k: v for k, v in answer.headers.items() if k.lower() != "content-encoding"}
            return httpx.Response(answer.status_code, headers=headers, content=answer.content)

        transport = httpx.MockTransport(forward)
        monkeypatch.setattr(
            cli_client,
            "_client",
            lambda *_: ReasonLabClient("http://testserver", creds.token, transport=transport),
        )
        yield InProcessApi(http, creds.token)
