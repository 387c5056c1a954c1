from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.auth import service as auth_service
from backend.bootstrap import ensure_admin, migrate
from backend.db import get_engine, session_factory, session_scope
from backend.main import create_app
from backend.projects import service as projects
from backend.settings import Settings

WORKER_TOKEN = "wk_test_worker_token_0123456789"
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
    with TestClient(app) as client:
        yield Api(client=client, settings=settings, admin_token=creds.token, admin_password=creds.password)
