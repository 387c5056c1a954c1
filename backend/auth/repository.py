"""All queries on users, their API tokens and their memberships."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, joinedload

from backend.models import ApiToken, Membership, Project, User


def token_by_hash(session: Session, token_hash: str) -> ApiToken | None:
    """The token and its user in one query (every request with an API token reads both)."""
    stmt = select(ApiToken).options(joinedload(ApiToken.user)).where(ApiToken.token_hash == token_hash)
    return session.scalars(stmt).first()


def user_by_name(session: Session, username: str) -> User | None:
    return session.scalars(select(User).where(User.username == username)).first()


def tokens_of(session: Session, user_id: int) -> list[ApiToken]:
    stmt = select(ApiToken).where(ApiToken.user_id == user_id, ApiToken.revoked_at.is_(None))
    return list(session.scalars(stmt.order_by(ApiToken.id)))


def count_users(session: Session) -> int:
    return len(session.scalars(select(User.id)).all())


def memberships_of(session: Session, user_id: int) -> list[tuple[Project, str]]:
    stmt = (
        select(Project, Membership.role)
        .join(Membership, Membership.project_id == Project.id)
        .where(Membership.user_id == user_id)
        .order_by(Project.id)
    )
    return [(p, r) for p, r in session.execute(stmt).all()]
