from __future__ import annotations

from fastapi import APIRouter, status

from backend.auth.dependencies import PrincipalDep
from backend.errors import Forbidden
from backend.http.deps import Id, SessionDep, SettingsDep
from backend.models import ProjectSecret
from backend.runs import service as runs
from backend.secrets import service
from backend.secrets.schemas import SecretHostsSet, SecretName, SecretPublic, SecretSet, SecretValue

router = APIRouter(tags=["secrets"])


def _public(secret: ProjectSecret) -> SecretPublic:
    return SecretPublic(
        name=secret.name,
        hosts=list(secret.hosts),
        updated_at=secret.updated_at,
        updated_by=service.updated_by(secret),
    )


@router.get("/projects/{project_id}/secrets", response_model=list[SecretPublic], operation_id="secrets-list")
def list_secrets(project_id: Id, principal: PrincipalDep, session: SessionDep) -> list[SecretPublic]:
    """The project's secrets by name (any member: specs name them); never a value."""
    return [_public(s) for s in service.list_secrets(session, principal, project_id)]


@router.put("/projects/{project_id}/secrets/{name}", response_model=SecretPublic, operation_id="secrets-set")
def set_secret(
    project_id: Id,
    name: SecretName,
    body: SecretSet,
    principal: PrincipalDep,
    session: SessionDep,
    settings: SettingsDep,
) -> SecretPublic:
    """Set or replace a secret and where it may be sent (project admins). The answer, like every other,
    leaves the value out."""
    secret = service.set_secret(session, settings, principal, project_id, name, body.value, body.hosts)
    return _public(secret)


@router.patch(
    "/projects/{project_id}/secrets/{name}", response_model=SecretPublic, operation_id="secrets-set-hosts"
)
def set_secret_hosts(
    project_id: Id, name: SecretName, body: SecretHostsSet, principal: PrincipalDep, session: SessionDep
) -> SecretPublic:
    """Where a secret may be sent, its value unchanged (project admins): runs not started yet get it only
    for endpoints the new hosts cover."""
    return _public(service.set_hosts(session, principal, project_id, name, body.hosts))


@router.delete(
    "/projects/{project_id}/secrets/{name}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="secrets-delete",
)
def delete_secret(project_id: Id, name: SecretName, principal: PrincipalDep, session: SessionDep) -> None:
    service.delete_secret(session, principal, project_id, name)


@router.get("/runs/{run_id}/secrets/{name}", response_model=SecretValue, operation_id="runs-secret")
def run_secret(
    run_id: Id, name: SecretName, principal: PrincipalDep, session: SessionDep, settings: SettingsDep
) -> SecretValue:
    """A secret the run's spec names, for the run's own token only (no user, not the worker token), with
    the hosts it may be sent to; a 403 while the spec sends it to an endpoint they do not cover."""
    if principal.run_id != run_id:
        raise Forbidden("only the run's own token reads the secrets its spec names")
    run = runs.get_for_worker(session, principal, run_id)
    value, hosts = service.secret_for_run(session, settings, run, name)
    return SecretValue(name=name, value=value, hosts=hosts)
