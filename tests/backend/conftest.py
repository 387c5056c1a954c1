from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from backend.auth import service as auth_service
from backend.bootstrap import AdminCredentials, ensure_admin, migrate, write_secret
from backend.db import get_engine, session_factory, session_scope
from backend.main import create_app
from backend.projects import service as projects
from backend.settings import Settings
from tests.conftest import cloned_database, per_test_database

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
            user = projects.create_member(session, username, USER_PASSWORD, project=project, role=role)
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


# The dialect matrix: a test module whose subject is SQL (queries, concurrency, migrations, metric
# storage and roll-ups, exports, queue order, the mirror, run numbers and names, attempts) is marked
# ``dialect_matrix`` and runs on SQLite and on the machine's Postgres; every other test runs on SQLite only.
# A test may still choose its dialects itself (``@pytest.mark.parametrize("database_url", [...], indirect=True)``).
# The Postgres twins carry the ``postgres`` marker, which ``make check`` leaves out (README, Testing).
DIALECTS = ["sqlite", "postgres"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "database_url" not in metafunc.fixturenames:
        return
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0]
        if "database_url" in ([n.strip() for n in names.split(",")] if isinstance(names, str) else names):
            return  # the test names its dialects
    matrix = metafunc.definition.get_closest_marker("dialect_matrix") is not None
    metafunc.parametrize("database_url", DIALECTS if matrix else ["sqlite"], indirect=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("database_url") == "postgres":
            item.add_marker(pytest.mark.postgres)


@dataclass
class Template:
    """A migrated database with the admin in it, made once per test run and cloned per test."""

    location: str  # the SQLite file, or the Postgres database's name
    creds: AdminCredentials


def _with_admin(database_url: str, home: Path) -> AdminCredentials:
    settings = make_settings(database_url, home)
    migrate(settings)
    creds = ensure_admin(settings)  # the one argon2 hash of the admin's password for this dialect
    assert creds is not None
    get_engine(database_url).dispose()
    get_engine.cache_clear()
    return creds


@pytest.fixture(scope="session")
def sqlite_api_template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    folder = tmp_path_factory.mktemp("sqlite-api-template")
    path = folder / "template.db"
    creds = _with_admin(f"sqlite:///{path}", folder / "home")
    leftovers = [p.name for p in folder.iterdir() if p.name.startswith("template.db-")]
    assert not leftovers, f"the template is not closed: {leftovers}"
    return Template(str(path), creds)


@pytest.fixture(scope="session")
def postgres_api_template(
    postgres_admin_url: str, postgres_template: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Template]:
    with cloned_database(postgres_admin_url, postgres_template, prefix="rl_apitemplate") as url:
        home = tmp_path_factory.mktemp("postgres-api-template")
        yield Template(url.rsplit("/", 1)[1], _with_admin(url, home))


@pytest.fixture
def postgres_api_url(postgres_admin_url: str, postgres_api_template: Template) -> Iterator[str]:
    """A database for one test, as a fresh clone of the migrated template with the admin in it (reused:
    tests/conftest.py, ``_DatabasePool``)."""
    with per_test_database(postgres_admin_url, postgres_api_template.location) as url:
        yield url


@pytest.fixture
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """SQLite (a file under the test's folder) or a Postgres database of its own, per the dialect matrix
    above. With the ``api`` fixture, it already holds the migrated schema and the admin (a copy of the
    session's template); without it, SQLite is a new file and Postgres a migrated clone, as before."""
    dialect = getattr(request, "param", "sqlite")
    with_api = "api" in request.fixturenames
    if dialect == "sqlite":
        path = tmp_path / "reasonlab.db"
        if with_api:
            template: Template = request.getfixturevalue("sqlite_api_template")
            shutil.copyfile(template.location, path)
        return f"sqlite:///{path}"
    url: str = request.getfixturevalue("postgres_api_url" if with_api else "postgres_url")
    return url


@pytest.fixture
def api(request: pytest.FixtureRequest, database_url: str, home: Path) -> Iterator[Api]:
    settings = make_settings(database_url, home)
    dialect = "sqlite" if database_url.startswith("sqlite") else "postgres"
    template: Template = request.getfixturevalue(f"{dialect}_api_template")
    creds = template.creds
    write_secret(home / "admin.token", creds.token)  # as ensure_admin leaves it on first start
    app = create_app(settings, background=False)
    side = WorkerSide()
    side.fallback = creds.token
    with TestClient(app) as client:
        client.event_hooks = {"request": [side.request], "response": [side.response]}
        yield Api(client=client, settings=settings, admin_token=creds.token, admin_password=creds.password)
