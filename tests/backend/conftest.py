from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from backend.auth import service as auth_service
from backend.bootstrap import ensure_admin, migrate
from backend.db import get_engine, session_factory, session_scope
from backend.main import create_app
from backend.projects import service as projects
from backend.settings import Settings

WORKER_TOKEN = "wk_test_worker_token_0123456789"
# ``api.worker`` sends this: "the worker's side of a run", which the client's hook below turns into the
# worker token for a claim or release, and into the run token of the run's latest claim for every other
# route of that run (what the executor does: worker/executor.py). Tests of the tokens themselves send the
# real headers (tests/backend/test_run_tokens.py).
WORKER_SIDE = "worker-side-of-the-run"
_RUN_PATH = re.compile(r"/api/v1/runs/(\d+)/(\w+)")


class WorkerSide:
    """Run tokens the claims handed out, by run id; the request and response hooks of the test client.
    A run nobody claimed is written as a member would from a notebook (the fallback: the admin's token),
    as the metric and result routes allow."""

    def __init__(self) -> None:
        self.tokens: dict[str, str] = {}
        self.fallback = WORKER_TOKEN

    def request(self, request: httpx.Request) -> None:
        if request.headers.get("authorization") != f"Bearer {WORKER_SIDE}":
            return
        match = _RUN_PATH.match(request.url.path)
        token = WORKER_TOKEN
        if match and match.group(2) not in ("claim",):
            token = self.tokens.get(match.group(1), self.fallback)
        request.headers["authorization"] = f"Bearer {token}"

    def response(self, response: httpx.Response) -> None:
        match = _RUN_PATH.match(response.request.url.path)
        if match and match.group(2) == "claim" and response.status_code == 200:
            response.read()
            self.tokens[match.group(1)] = response.json()["run_token"]


USER_PASSWORD = "correct-horse-battery-42"  # passes the password policy (backend/auth/policy.py)


@dataclass
class Api:
    client: TestClient
    settings: Settings
    admin_token: str
    admin_password: str

    def h(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.admin_token}"}

    @property
    def worker(self) -> dict[str, str]:
        """The worker's side of a run: the worker token to claim, then the claim's run token."""
        return {"Authorization": f"Bearer {WORKER_SIDE}"}

    @property
    def worker_token(self) -> dict[str, str]:
        """The worker token itself."""
        return {"Authorization": f"Bearer {WORKER_TOKEN}"}

    def user(self, username: str, role: str = "member", project: str = "default") -> str:
        """Create a user with a role in a project; returns an API token."""
        factory = session_factory(get_engine(self.settings.database_url))
        with session_scope(factory) as session:
            projects.get_or_create_project(session, project)
            user = auth_service.create_user(session, username, USER_PASSWORD, project=project, role=role)
            _, token = auth_service.create_token(session, user, "test")
        return token

    def submit(
        self, spec: dict[str, Any] | None = None, sweep: dict[str, Any] | None = None, **kw: Any
    ) -> Any:
        body: dict[str, Any] = {
            "name": kw.pop("name", "exp"),
            "kind": kw.pop("kind", "diagnostic"),
            "spec": spec or {},
        }
        if sweep is not None:
            body["sweep"] = sweep
        body.update(kw)
        return self.client.post("/api/v1/experiments", json=body, headers=self.h(kw.get("token")))


def make_settings(database_url: str, home: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "home": home,
        "database_url": database_url,
        "worker_token": WORKER_TOKEN,
        "heartbeat_timeout": 2.0,
    }
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
def api(database_url: str, home: Path) -> Iterator[Api]:
    settings = make_settings(database_url, home)
    migrate(settings)
    creds = ensure_admin(settings)
    assert creds is not None
    app = create_app(settings, background=False)
    side = WorkerSide()
    side.fallback = creds.token
    with TestClient(app) as client:
        client.event_hooks = {"request": [side.request], "response": [side.response]}
        yield Api(client=client, settings=settings, admin_token=creds.token, admin_password=creds.password)
