"""Migrations and first-start bootstrap (the default project, the admin user and its token)."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.orm import Session

from backend.auth import repository as auth_repo
from backend.auth import service as auth_service
from backend.auth.security import use_settings_cost
from backend.db import get_engine, session_factory, session_scope
from backend.projects import service as projects
from backend.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


def alembic_config(url: str) -> Config:
    ini = ROOT / "alembic.ini"
    cfg = Config(str(ini)) if ini.is_file() else Config()
    cfg.set_main_option("script_location", str(ROOT / "alembic"))
    cfg.attributes["url"] = url
    return cfg


def migrate(settings: Settings) -> None:
    """Bring the database to the migration head (idempotent)."""
    command.upgrade(alembic_config(settings.database_url), "head")


@dataclass
class AdminCredentials:
    username: str
    password: str
    token: str


def write_secret(path: Path, value: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(value + "\n")
    os.chmod(path, 0o600)


def ensure_admin(settings: Settings, username: str = "admin") -> AdminCredentials | None:
    """On first start: the default project, an admin with a random password and an API token.

    Returns the credentials once (to print); None when users already exist.
    """
    use_settings_cost(settings)
    factory = session_factory(get_engine(settings.database_url))
    with session_scope(factory) as session:
        projects.get_or_create_project(session, projects.DEFAULT_PROJECT, "The default project")
        if auth_repo.count_users(session) > 0:
            return None
        password = secrets.token_urlsafe(12)
        user = projects.create_member(session, username, password, is_admin=True)
        _, token = auth_service.create_token(session, user, "admin (created by reasonlab up)")
    write_secret(settings.home / "admin.token", token)
    return AdminCredentials(username=username, password=password, token=token)


def ensure_worker_token(settings: Settings) -> str:
    """Embedded mode: a random worker token kept under the home folder (mode 600)."""
    if settings.worker_token:
        return settings.worker_token
    path = settings.home / "worker.token"
    if path.is_file():
        return path.read_text().strip()
    token = "wk_" + secrets.token_urlsafe(32)
    write_secret(path, token)
    return token


def session_for(settings: Settings) -> Session:
    return session_factory(get_engine(settings.database_url))()
