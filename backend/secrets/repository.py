"""All queries on project secrets."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.models import ProjectSecret


def by_name(session: Session, project_id: int, name: str) -> ProjectSecret | None:
    stmt = select(ProjectSecret).where(ProjectSecret.project_id == project_id, ProjectSecret.name == name)
    return session.scalars(stmt).first()


def of_project(session: Session, project_id: int) -> list[ProjectSecret]:
    stmt = select(ProjectSecret).where(ProjectSecret.project_id == project_id).order_by(ProjectSecret.name)
    return list(session.scalars(stmt))


def names(session: Session, project_id: int) -> set[str]:
    stmt = select(ProjectSecret.name).where(ProjectSecret.project_id == project_id)
    return set(session.scalars(stmt))


def hosts_by_name(session: Session, project_id: int) -> dict[str, list[str]]:
    """Every secret of the project: name -> the hosts it may be sent to."""
    stmt = select(ProjectSecret.name, ProjectSecret.hosts).where(ProjectSecret.project_id == project_id)
    return {name: list(hosts or []) for name, hosts in session.execute(stmt)}
