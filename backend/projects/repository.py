"""All queries on projects and their members (a user's own memberships: backend/auth/repository.py)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from backend import db
from backend.models import Membership, Project, User


def by_name(session: Session, name: str) -> Project | None:
    return session.scalars(select(Project).where(Project.name == name)).first()


def role_of(session: Session, project_id: int, user_id: int) -> str | None:
    m = session.get(Membership, (project_id, user_id))
    return m.role if m is not None else None


def all_projects(session: Session) -> list[Project]:
    return list(session.scalars(select(Project).order_by(Project.id)))


def members(session: Session, project_id: int) -> list[tuple[User, str]]:
    stmt = (
        select(User, Membership.role)
        .join(Membership, Membership.user_id == User.id)
        .where(Membership.project_id == project_id)
        .order_by(User.id)
    )
    return [(u, r) for u, r in session.execute(stmt).all()]


def visible_project_ids(session: Session, user_id: int) -> list[int]:
    return list(session.scalars(select(Membership.project_id).where(Membership.user_id == user_id)))


def lock_for_cap(session: Session, project_id: int) -> None:
    """Hold the project's row until commit, so two requests adding to one of the project's capped
    collections at once take turns at its cap."""
    db.lock_row(session, Project.id, project_id)
