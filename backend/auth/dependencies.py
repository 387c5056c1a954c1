"""Who is calling and what they may reach: the credential resolved to a ``Principal``, the worker's and a
run token's operation allow-lists, a run read ticket, as FastAPI dependencies (``PrincipalDep``,
``CurrentUser``). The request edge (backend/http/limits.py) resolves a body's credential with the same
``resolve_credential``, handed to it by the app factory (backend/main.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from backend.auth import repository as auth_repo
from backend.auth.principal import Principal
from backend.auth.security import (
    RUN_READ,
    RUN_TOKEN_PREFIX,
    TOKEN_PREFIX,
    hash_api_token,
    read_jwt,
    read_run_token,
    same_secret,
)
from backend.db import utcnow
from backend.errors import Conflict, Forbidden, NotFound, Unauthorized
from backend.http.admission import UNSHARED
from backend.http.deps import SessionDep, SettingsDep
from backend.http.limits import RESOLVED
from backend.models import Run, User
from backend.settings import Settings
from backend.specs import source_run_ids

_bearer = HTTPBearer(
    auto_error=False, description="JWT, API token (rl_...), a run's token (rlrun....) or the worker token"
)


def resolve_credential(session: Session, settings: Settings, credential: str) -> Principal:
    if same_secret(credential, settings.worker_token):
        return Principal(user=None, is_worker=True)
    if credential.startswith(RUN_TOKEN_PREFIX):
        scope = read_run_token(credential, settings.secret_key)
        if scope is None:
            raise Unauthorized("invalid or expired run token")
        return Principal(user=None, run_id=scope[0], attempt=scope[1])
    if credential.startswith(TOKEN_PREFIX):
        token = auth_repo.token_by_hash(session, hash_api_token(credential))
        if token is None or token.revoked_at is not None:
            raise Unauthorized("invalid or revoked API token")
        now = utcnow()
        # Record use at most once a minute: a write on every request would serialise readers on SQLite.
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            token.last_used_at = now
            session.commit()
        return Principal(user=token.user)
    claims = read_jwt(credential, settings.secret_key)
    user = session.get(User, int(claims["sub"])) if claims is not None else None
    if user is None:
        raise Unauthorized("invalid or expired token: log in again")
    return Principal(user=user)


def credential_check(settings: Settings, factory: sessionmaker[Session]) -> Callable[[str], Principal]:
    """``resolve_credential`` in a session of its own, for the request edge's check of a body's credential
    (backend/http/limits.py) before any route runs. The principal it returns (its user detached, every
    column loaded) is what ``get_principal`` takes for the same request instead of a second lookup."""

    # autocommit: the lookup is one statement, so it goes without BEGIN and ROLLBACK (two of a small
    # request's round trips); the once-a-minute ``last_used_at`` write commits by itself
    bind = factory.kw.get("bind") if isinstance(factory, sessionmaker) else None
    reads = bind.execution_options(isolation_level="AUTOCOMMIT") if isinstance(bind, Engine) else None

    def authenticate(credential: str) -> Principal:
        session = factory(bind=reads) if reads is not None else factory()
        try:
            return resolve_credential(session, settings, credential)
        finally:
            session.close()

    return authenticate


def credential_name(settings: Settings) -> Callable[[str], str | None]:
    """A credential's name for the request edge's budgets and the admission slots' shares
    (backend/http/limits.py, admission.py), from the credential alone (no database: it runs for every
    request): the worker token, a run (its token's run), a user (a login's subject) or an API token (its
    hash); None for what names no one (the route refuses it)."""

    def name(credential: str) -> str | None:
        if same_secret(credential, settings.worker_token):
            return UNSHARED
        if credential.startswith(RUN_TOKEN_PREFIX):
            scope = read_run_token(credential, settings.secret_key)
            return f"run:{scope[0]}" if scope is not None else None
        if credential.startswith(TOKEN_PREFIX):
            return f"token:{hash_api_token(credential)[:32]}"
        claims = read_jwt(credential, settings.secret_key)
        return f"user:{claims['sub']}" if claims is not None else None

    return name


def get_principal(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    credential = creds.credentials if creds is not None else None
    route = request.scope.get("route")
    if (
        credential is None
        and "ticket" in request.query_params
        and request.method == "GET"
        and (getattr(route, "operation_id", None) in READ_TICKET_OPERATIONS)
    ):
        # Browsers' EventSource and plain download links cannot send headers: an event stream or an
        # artifact download takes a run read ticket in the URL (POST /runs/{id}/read-ticket), valid a
        # minute for that one run, never a login or API token.
        return read_ticket_principal(request, session, settings, request.query_params["ticket"])
    if not credential:
        raise Unauthorized("missing credentials: send 'Authorization: Bearer <token>'")
    principal = _resolved_at_edge(request, session, credential) or resolve_credential(
        session, settings, credential
    )
    operation = getattr(route, "operation_id", None)
    if principal.is_worker and operation not in WORKER_OPERATIONS:
        raise Forbidden("the worker token may only claim and release runs")
    if principal.is_run:
        check_run_scope(request, session, principal, operation)
    return principal


def _resolved_at_edge(request: Request, session: Session, credential: str) -> Principal | None:
    """The principal the request edge resolved this request's credential to (a request with a body:
    backend/http/limits.py), its user attached to the route's session without reading it again (the
    edge's session loaded every column and is closed), or None where the edge resolved nothing."""
    resolved = request.scope.get(RESOLVED)
    if resolved is None or resolved[0] != credential or not isinstance(resolved[1], Principal):
        return None
    found: Principal = resolved[1]
    if found.user is None:
        return found
    return replace(found, user=session.merge(found.user, load=False))


def check_run_scope(request: Request, session: Session, principal: Principal, operation: str | None) -> None:
    """A run token reaches its own run's routes only, and only while its attempt is the run's running
    one: a finished, reaped or released attempt's token answers 409 (what a stale attempt gets anyway,
    so the heartbeat reads it as a lost lease)."""
    if operation not in RUN_OPERATIONS:
        raise Forbidden("a run token may only call its own run's routes")
    run = session.get(Run, principal.run_id)
    if run is None:
        raise NotFound(f"run {principal.run_id} not found")
    # a finish re-sent after its answer was lost finds the run finished: the service answers it as before
    ended = run.status != "running" and operation != "runs-finish"
    if ended or run.attempt != principal.attempt:
        raise Conflict(
            f"attempt {principal.attempt} no longer owns run {run.id} (it is {run.status}, attempt {run.attempt})"
        )
    target = str(request.path_params.get("run_id"))
    if target == str(run.id):
        return
    # A spec may name runs it starts from (a fine-tuning run's pre-training run: checked visible to its
    # submitter at submission, backend/experiments/sources.py): their artifacts are readable, nothing else.
    if operation in SOURCE_RUN_OPERATIONS and target in {str(i) for i in source_run_ids(run.kind, run.spec)}:
        return
    raise Forbidden("a run token reaches its own run only (and reads the runs its spec starts from)")


# What the worker token may call (docs/operations.md, "Trust model"): claiming a run (which hands out the
# run's own token) and giving a run back. It reads no run and writes no metric.
WORKER_OPERATIONS = frozenset({"health-get", "runs-claim", "runs-release"})

# What a run's token may call, on its own run only: its lifecycle, its writes and reading them back.
RUN_OPERATIONS = frozenset(
    {
        "runs-get",
        "runs-heartbeat",
        "runs-finish",
        "runs-release",
        "runs-resumed",
        "runs-patch",
        "runs-post_logs",
        "runs-post_params",
        "runs-logs",
        "runs-secret",
        "runs-dataset",
        "metrics-post",
        "metrics-get",
        "metrics-keys",
        "results-post",
        "results-list_run",
        "examples-post",
        "artifacts-list",
        "artifacts-download",
        "artifacts-upload",
        "artifacts-delete",
    }
)

# What a run's token may read of a source run its spec names (never a write).
SOURCE_RUN_OPERATIONS = frozenset({"artifacts-list", "artifacts-download"})

# What a run read ticket opens (GET only): the run's event stream and its artifact downloads.
READ_TICKET_OPERATIONS = frozenset({"runs-events", "artifacts-download"})


def read_ticket_principal(request: Request, session: Session, settings: Settings, ticket: str) -> Principal:
    claims = read_jwt(ticket, settings.secret_key, typ=RUN_READ)
    run_id = request.path_params.get("run_id")
    if claims is None or str(claims.get("run")) != str(run_id):
        raise Unauthorized("invalid or expired run read ticket: ask POST /runs/{id}/read-ticket again")
    user = session.get(User, int(claims["sub"]))
    if user is None:
        raise Unauthorized("invalid or expired run read ticket")
    return Principal(user=user)


PrincipalDep = Annotated[Principal, Depends(get_principal)]


def get_user(principal: PrincipalDep) -> User:
    if principal.user is None:
        raise Unauthorized("this route needs a user credential, not a worker's or a run's token")
    return principal.user


CurrentUser = Annotated[User, Depends(get_user)]
