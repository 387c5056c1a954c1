"""All queries on saved views."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.models import SavedView


def of_project(session: Session, project_id: int) -> list[SavedView]:
    stmt = select(SavedView).where(SavedView.project_id == project_id).order_by(SavedView.name, SavedView.id)
    return list(session.scalars(stmt))


def by_name(session: Session, project_id: int, name: str) -> SavedView | None:
    stmt = select(SavedView).where(SavedView.project_id == project_id, SavedView.name == name)
    return session.scalars(stmt).first()
