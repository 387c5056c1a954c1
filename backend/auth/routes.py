from __future__ import annotations

from fastapi import APIRouter, status

from backend.auth import repository, service
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
from backend.deps import CurrentUser, Id, SessionDep, SettingsDep
from backend.projects import repository as projects_repo

router = APIRouter(prefix="/auth", tags=["auth"])


@router.post("/login", response_model=TokenOut, operation_id="auth-login")
def login(body: LoginIn, session: SessionDep, settings: SettingsDep) -> TokenOut:
    user = service.authenticate(session, body.username, body.password)
    token, expires = make_jwt(user.id, settings.secret_key, settings.jwt_ttl_seconds)
    return TokenOut(access_token=token, expires_at=expires)


@router.get("/me", response_model=UserPublic, operation_id="auth-me")
def me(user: CurrentUser, session: SessionDep) -> UserPublic:
    memberships = [
        MembershipPublic(project_id=p.id, project=p.name, role=role)
        for p, role in projects_repo.memberships_of(session, user.id)
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
        for t in repository.tokens_of(session, user.id)
    ]


@router.delete("/tokens/{token_id}", status_code=status.HTTP_204_NO_CONTENT, operation_id="auth-revoke_token")
def revoke_token(token_id: Id, user: CurrentUser, session: SessionDep) -> None:
    service.revoke_token(session, user, token_id)
