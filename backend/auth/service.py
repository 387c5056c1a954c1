"""Users, logins and API tokens."""

from __future__ import annotations

from sqlalchemy.orm import Session

from backend import db, errors
from backend.auth import policy, repository
from backend.auth.security import (
    dummy_hash,
    hash_api_token,
    hash_password,
    needs_rehash,
    new_api_token,
    verify_password,
)
from backend.db import utcnow
from backend.errors import Conflict, Invalid, NotFound, Unauthorized
from backend.models import ApiToken, Project, User

MAX_TOKENS = 100  # live API tokens a user may hold (docs/api.md, Limits)


def create_user(
    session: Session,
    username: str,
    password: str,
    *,
    is_admin: bool = False,
) -> User:
    """A new user under the username and password policy; a project membership is the projects domain's
    (``backend.projects.service.create_member``)."""
    problems = [
        (field, problem)
        for field, problem in (
            ("username", policy.username_problem(username)),
            ("password", policy.password_problem(password, username)),
        )
        if problem is not None
    ]
    if problems:
        raise Invalid(
            "; ".join(f"{field}: {problem}" for field, problem in problems),
            [{"loc": ["body", f], "msg": p, "type": "policy"} for f, p in problems],
        )
    if repository.user_by_name(session, username) is not None:
        raise Conflict(f"user {username!r} already exists")
    user = User(username=username, password_hash=hash_password(password), is_admin=is_admin)
    session.add(user)
    session.flush()
    return user


def authenticate(session: Session, username: str, password: str) -> User:
    """The user, or 401. An unknown username costs one argon2 verification too (against a dummy hash),
    so answer times do not tell which usernames exist."""
    user = repository.user_by_name(session, username)
    if user is None:
        verify_password(dummy_hash(), password)
        raise Unauthorized("wrong username or password")
    if not verify_password(user.password_hash, password):
        raise Unauthorized("wrong username or password")
    if needs_rehash(user.password_hash):  # the configured cost changed since this hash was made
        user.password_hash = hash_password(password)
    return user


def create_token(session: Session, user: User, name: str) -> tuple[ApiToken, str]:
    db.lock_row(session, User.id, user.id)
    raw = new_api_token()
    token = ApiToken(user_id=user.id, name=name, token_hash=hash_api_token(raw), prefix=raw[:8])
    session.add(token)
    session.flush()
    held = db.count_rows(session, ApiToken, ApiToken.user_id == user.id, ApiToken.revoked_at.is_(None))
    errors.check_room(
        held,
        MAX_TOKENS,
        owner=f"user {user.username!r}",
        per="a user",
        things="live API tokens",
        loc=["body", "name"],
        kind="user",
        then="revoke one to make another",
    )
    return token, raw


def revoke_token(session: Session, user: User, token_id: int) -> None:
    token = session.get(ApiToken, token_id)
    if token is None or token.user_id != user.id or token.revoked_at is not None:
        raise NotFound(f"token {token_id} not found")
    token.revoked_at = utcnow()


def tokens(session: Session, user: User) -> list[ApiToken]:
    """The user's API tokens that are not revoked, the oldest first."""
    return repository.tokens_of(session, user.id)


def memberships(session: Session, user: User) -> list[tuple[Project, str]]:
    """The user's projects and role in each, by project id."""
    return repository.memberships_of(session, user.id)
