"""The queries of external runs: their experiment by name, the next run number in it."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from backend.models import Experiment, Run
from common.runs import EXTERNAL_KIND


def experiment_named(session: Session, project_id: int, name: str) -> Experiment | None:
    """The project's external experiment of that name (the oldest, should two scripts have raced)."""
    stmt = (
        select(Experiment)
        .where(Experiment.project_id == project_id, Experiment.name == name, Experiment.kind == EXTERNAL_KIND)
        .order_by(Experiment.id)
        .limit(1)
    )
    return session.scalars(stmt).first()


def lock_experiment(session: Session, experiment_id: int) -> None:
    """Hold the experiment's row until commit (Postgres: FOR UPDATE; SQLite writes one at a time anyway), so
    two scripts opening runs in it at once take different run numbers."""
    session.execute(select(Experiment.id).where(Experiment.id == experiment_id).with_for_update())


def next_index(session: Session, experiment_id: int) -> int:
    last = session.scalar(select(func.max(Run.index)).where(Run.experiment_id == experiment_id))
    return 0 if last is None else int(last) + 1
