from __future__ import annotations

import math

from fastapi import APIRouter, Request, status
from starlette.concurrency import run_in_threadpool

from backend.auth import service
from backend.auth.dependencies import CurrentUser
from backend.auth.schemas import (
    ApiTokenCreate,
    ApiTokenCreated,
    ApiTokenPublic,
    LoginIn,
    MembershipPublic,
    TokenOut,
    UserPublic,
)
from backend.auth.security import make_jwt
from backend.auth.throttle import LoginThrottle
from backend.errors import ErrorBody, TooManyRequests, Unauthorized
from backend.http.deps import Id, SessionDep, SettingsDep

router = APIRouter(prefix="/auth", tags=["auth"])


@router.post(
    "/login",
    response_model=TokenOut,
    operation_id="auth-login",
    responses={429: {"model": ErrorBody, "description": "too many failed logins; see Retry-After"}},
)
async def login(body: LoginIn, request: Request, session: SessionDep, settings: SettingsDep) -> TokenOut:
    """Throttled per (account, client address) pair and per client address (backend/auth/throttle.py):
    failures from one address never refuse a login from another. The client address is the
    connection's peer, or what a trusted proxy forwarded (REASONLAB_TRUSTED_PROXIES). Async so that
    logins waiting for a hashing slot hold no worker thread the other routes need."""
    state = request.app.state
    throttle: LoginThrottle = state.login_throttle
    address = request.client.host if request.client else "unknown"
    _refuse_if_throttled(throttle, body.username, address)
    async with state.login_slots:
        # again, now that a slot is ours: failures recorded while this login queued for it count, so a
        # burst of parallel guesses is no way around the delays
        _refuse_if_throttled(throttle, body.username, address)
        try:
            user = await run_in_threadpool(service.authenticate, session, body.username, body.password)
        except Unauthorized:
            throttle.failed(body.username, address)
            raise
    throttle.succeeded(body.username, address)
    token, expires = make_jwt(user.id, settings.secret_key, settings.jwt_ttl_seconds)
    return TokenOut(access_token=token, expires_at=expires)


def _refuse_if_throttled(throttle: LoginThrottle, username: str, address: str) -> None:
    wait = throttle.wait(username, address)
    if wait > 0:
        raise TooManyRequests(f"too many failed logins; try again in {math.ceil(wait)} s", wait)


@router.get("/me", response_model=UserPublic, operation_id="auth-me")
def me(user: CurrentUser, session: SessionDep) -> UserPublic:
    memberships = [
        MembershipPublic(project_id=p.id, project=p.name, role=role)
        for p, role in service.memberships(session, user)
    ]
    return UserPublic(id=user.id, username=user.username, is_admin=user.is_admin, memberships=memberships)


@router.post(
    "/tokens",
    response_model=ApiTokenCreated,
    status_code=status.HTTP_201_CREATED,
    operation_id="auth-create_token",
)
def create_token(body: ApiTokenCreate, user: CurrentUser, session: SessionDep) -> ApiTokenCreated:
    token, raw = service.create_token(session, user, body.name)
    return ApiTokenCreated(
        id=token.id,
        name=token.name,
        prefix=token.prefix,
        created_at=token.created_at,
        last_used_at=None,
        token=raw,
    )


@router.get("/tokens", response_model=list[ApiTokenPublic], operation_id="auth-list_tokens")
def list_tokens(user: CurrentUser, session: SessionDep) -> list[ApiTokenPublic]:
    return [
        ApiTokenPublic(
            id=t.id, name=t.name, prefix=t.prefix, created_at=t.created_at, last_used_at=t.last_used_at
        )
        for t in service.tokens(session, user)
    ]


@router.delete("/tokens/{token_id}", status_code=status.HTTP_204_NO_CONTENT, operation_id="auth-revoke_token")
def revoke_token(token_id: Id, user: CurrentUser, session: SessionDep) -> None:
    service.revoke_token(session, user, token_id)
