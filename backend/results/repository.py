"""All queries on result records."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.models import Result, Run


def by_key(session: Session, run_id: int, key: str) -> Result | None:
    return session.scalars(select(Result).where(Result.run_id == run_id, Result.key == key)).first()


def of_run(session: Session, run_id: int, kind: str | None) -> list[Result]:
    stmt = select(Result).where(Result.run_id == run_id)
    if kind:
        stmt = stmt.where(Result.kind == kind)
    return list(session.scalars(stmt.order_by(Result.id)))


def of_experiment(
    session: Session, experiment_id: int, kind: str | None
) -> list[tuple[Result, dict[str, Any]]]:
    """Every result of the experiment's runs with the params of the run that posted it."""
    stmt = (
        select(Result, Run.params)
        .join(Run, Run.id == Result.run_id)
        .where(Run.experiment_id == experiment_id)
    )
    if kind:
        stmt = stmt.where(Result.kind == kind)
    return [(r, params) for r, params in session.execute(stmt.order_by(Result.id))]
