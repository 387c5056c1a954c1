"""All queries on project datasets."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.models import ProjectDataset


def by_name(session: Session, project_id: int, name: str) -> ProjectDataset | None:
    stmt = select(ProjectDataset).where(ProjectDataset.project_id == project_id, ProjectDataset.name == name)
    return session.scalars(stmt).first()


def of_project(session: Session, project_id: int) -> list[ProjectDataset]:
    stmt = select(ProjectDataset).where(ProjectDataset.project_id == project_id).order_by(ProjectDataset.name)
    return list(session.scalars(stmt))


def names(session: Session, project_id: int) -> set[str]:
    stmt = select(ProjectDataset.name).where(ProjectDataset.project_id == project_id)
    return set(session.scalars(stmt))
