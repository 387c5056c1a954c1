"""Project secrets: keys for outside endpoints (a grader's or a student's API key).

A project admin sets, replaces and deletes them; members and viewers see their names (to write specs),
nobody reads a value back through the API. A run gets a value only with its own run token, and only for
a name its spec holds in a ``*_secret`` field (worker/specs/secrets.py); the worker redacts the value
from everything the run records. Values are sealed at rest (backend/secrets/crypto.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from backend.db import utcnow
from backend.errors import Forbidden, NotFound
from backend.models import ProjectSecret, Run, User
from backend.projects import service as projects
from backend.secrets import crypto, repository
from backend.settings import Settings
from worker.specs import manifest
from worker.specs.secrets import secret_references

if TYPE_CHECKING:
    from backend.auth.principal import Principal


def _key(settings: Settings) -> bytes:
    return crypto.derive_key(settings.secrets_key, settings.secret_key)


def list_secrets(session: Session, principal: Principal, project_id: int) -> list[ProjectSecret]:
    projects.require_role(session, principal, project_id, "viewer", f"project {project_id}")
    return repository.of_project(session, project_id)


def set_secret(
    session: Session, settings: Settings, principal: Principal, project_id: int, name: str, value: str
) -> ProjectSecret:
    projects.require_role(session, principal, project_id, "admin", f"project {project_id}")
    sealed = crypto.seal(_key(settings), project_id, name, value)
    secret = repository.by_name(session, project_id, name)
    if secret is None:
        secret = ProjectSecret(project_id=project_id, name=name, sealed=sealed)
        session.add(secret)
    secret.sealed = sealed
    secret.updated_at = utcnow()
    secret.updated_by_id = principal.user_id
    session.flush()
    return secret


def delete_secret(session: Session, principal: Principal, project_id: int, name: str) -> None:
    projects.require_role(session, principal, project_id, "admin", f"project {project_id}")
    secret = repository.by_name(session, project_id, name)
    if secret is None:
        raise NotFound(f"secret {name!r} not found")
    session.delete(secret)
    session.flush()


def names_in_spec(kind: str, spec: dict[str, object]) -> dict[tuple[str | int, ...], str]:
    """Field path -> secret name, for every secret a stored spec names."""
    model = manifest(kind).spec.model_validate(spec)
    return secret_references(model)


def missing_secret_errors(
    session: Session, project_id: int, kind: str, spec: dict[str, object]
) -> list[tuple[list[str | int], str]]:
    """(field path, message) for every secret a spec names that its project does not have."""
    have = repository.names(session, project_id)
    return [
        (list(path), f"project secret {name!r} is not set (a project admin sets it under project settings)")
        for path, name in names_in_spec(kind, spec).items()
        if name not in have
    ]


def secret_for_run(session: Session, settings: Settings, run: Run, name: str) -> str:
    """The value of ``name`` for the run whose spec names it (the run token's own run)."""
    if name not in names_in_spec(run.kind, run.spec).values():
        raise Forbidden(f"run {run.id}'s spec names no secret {name!r}")
    secret = repository.by_name(session, run.project_id, name)
    if secret is None:
        raise NotFound(f"project secret {name!r} is not set")
    return crypto.open_sealed(_key(settings), run.project_id, name, secret.sealed)


def updated_by(secret: ProjectSecret) -> str | None:
    user: User | None = secret.updated_by
    return user.username if user is not None else None
