"""Project secrets: keys for outside endpoints (a grader's or a student's API key).

A project admin sets, replaces and deletes them, each with the hosts (or URL prefixes) it may be sent
to; members and viewers see their names and hosts (to write specs), nobody reads a value back through the
API. A run gets a value only with its own run token, only for a name its spec holds in a ``*_secret``
field (worker/specs/secrets.py), and only while every endpoint its spec sends it to is among its hosts;
the worker checks each call again before it connects and redacts the value from everything the run
records. Values are sealed at rest (backend/secrets/crypto.py).

Members may submit specs that name secrets (that is what a project's secrets are for: its members' runs
call the admin's endpoints), and only to the admin's hosts (a member's spec sent the project's
key to an endpoint of their own); viewers submit nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from backend import db
from backend.db import utcnow
from backend.errors import Forbidden, NotFound
from backend.models import ProjectSecret, Run, User
from backend.projects import service as projects
from backend.projects.service import MAX_SECRETS
from backend.secrets import crypto, repository
from backend.settings import Settings
from worker.specs import manifest
from worker.specs.confine import Refused, check_url, secret_hosts, secret_refusal
from worker.specs.secrets import secret_destinations

if TYPE_CHECKING:
    from backend.auth.principal import Principal


def _key(settings: Settings) -> bytes:
    return crypto.derive_key(settings.secrets_key, settings.secret_key)


def list_secrets(session: Session, principal: Principal, project_id: int) -> list[ProjectSecret]:
    projects.require_role(session, principal, project_id, "viewer", f"project {project_id}")
    return repository.of_project(session, project_id)


def set_secret(
    session: Session,
    settings: Settings,
    principal: Principal,
    project_id: int,
    name: str,
    value: str,
    hosts: list[str] | None = None,
) -> ProjectSecret:
    """Set or replace ``name``; ``hosts`` None keeps a secret's hosts (a new one has none)."""
    projects.require_role(session, principal, project_id, "admin", f"project {project_id}")
    sealed = crypto.seal(_key(settings), project_id, name, value)
    secret = repository.by_name(session, project_id, name)
    if secret is None:
        projects.lock_for_cap(session, project_id)
        secret = ProjectSecret(project_id=project_id, name=name, sealed=sealed, hosts=[])
        session.add(secret)
        session.flush()
        held = db.count_rows(session, ProjectSecret, ProjectSecret.project_id == project_id)
        projects.check_cap(project_id, held, MAX_SECRETS, "secrets", "set another")
    secret.sealed = sealed
    if hosts is not None:
        secret.hosts = _distinct(hosts)
    secret.updated_at = utcnow()
    secret.updated_by_id = principal.user_id
    session.flush()
    return secret


def set_hosts(
    session: Session, principal: Principal, project_id: int, name: str, hosts: list[str]
) -> ProjectSecret:
    """Where ``name`` may be sent, without its value (which nobody reads back)."""
    projects.require_role(session, principal, project_id, "admin", f"project {project_id}")
    secret = repository.by_name(session, project_id, name)
    if secret is None:
        raise NotFound(f"secret {name!r} not found")
    secret.hosts = _distinct(hosts)
    secret.updated_at = utcnow()
    secret.updated_by_id = principal.user_id
    session.flush()
    return secret


def _distinct(hosts: list[str]) -> list[str]:
    return list(dict.fromkeys(h.strip() for h in hosts))


def delete_secret(session: Session, principal: Principal, project_id: int, name: str) -> None:
    projects.require_role(session, principal, project_id, "admin", f"project {project_id}")
    secret = repository.by_name(session, project_id, name)
    if secret is None:
        raise NotFound(f"secret {name!r} not found")
    session.delete(secret)
    session.flush()


def destination_errors(
    hosts: dict[str, list[str]], destinations: dict[tuple[str | int, ...], tuple[str, tuple[str, ...]]]
) -> list[tuple[tuple[str | int, ...], str, str]]:
    """(field path, message, error type) for every secret of ``destinations`` (a spec's
    ``secret_destinations``) that its project does not have, or that goes to a URL none of its ``hosts``
    (secret name -> entries) covers."""
    errors: list[tuple[tuple[str | int, ...], str, str]] = []
    for path, (name, urls) in destinations.items():
        if name not in hosts:
            msg = f"project secret {name!r} is not set (a project admin sets it in project settings)"
            errors.append((path, msg, "secret_not_set"))
            continue
        why = _refusal(name, urls, hosts[name])
        if why is not None:
            errors.append((path, why, "secret_host"))
    return errors


def _refusal(name: str, urls: tuple[str, ...], entries: list[str]) -> str | None:
    try:
        allowed = secret_hosts(entries)
    except Refused as exc:  # stored before a rule changed: the admin sets them again
        return (
            f"project secret {name!r} has a host that is no longer valid ({exc}): a project admin sets them"
        )
    for url in urls:
        try:
            target = check_url(url)
        except Refused:  # the endpoint's own field says why (it is validated with the spec)
            continue
        why = secret_refusal(name, target, allowed)
        if why is not None:
            return why
    return None


def secret_for_run(session: Session, settings: Settings, run: Run, name: str) -> tuple[str, list[str]]:
    """The value of ``name`` and its hosts, for the run whose spec names it (the run token's own run),
    while every endpoint the spec sends it to is among its hosts (an admin may have narrowed them since
    the submission)."""
    model = manifest(run.kind).spec.model_validate(run.spec)
    destinations = {p: d for p, d in secret_destinations(model).items() if d[0] == name}
    if not destinations:
        raise Forbidden(f"run {run.id}'s spec names no secret {name!r}")
    secret = repository.by_name(session, run.project_id, name)
    if secret is None:
        raise NotFound(f"project secret {name!r} is not set")
    for _path, (_name, urls) in destinations.items():
        why = _refusal(name, urls, secret.hosts)
        if why is not None:
            raise Forbidden(why)
    return crypto.open_sealed(_key(settings), run.project_id, name, secret.sealed), list(secret.hosts)


def updated_by(secret: ProjectSecret) -> str | None:
    user: User | None = secret.updated_by
    return user.username if user is not None else None
