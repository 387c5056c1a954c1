"""All queries on comments, reviews, tags, stars and the activity feed.

The tag lists an answer carries are read with the experiments repository's ``tags_of`` and the runs
repository's ``run_tags_of``.
"""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from backend.models import Activity, Comment, ExperimentTag, Review, Run, RunTag, Star


def experiment_comments(session: Session, experiment_id: int) -> list[Comment]:
    """Comments on the experiment itself, not on one of its runs."""
    stmt = select(Comment).where(Comment.experiment_id == experiment_id, Comment.run_id.is_(None))
    return list(session.scalars(stmt.order_by(Comment.id)))


def run_comments(session: Session, run_id: int) -> list[Comment]:
    return list(session.scalars(select(Comment).where(Comment.run_id == run_id).order_by(Comment.id)))


def reviews_of(session: Session, experiment_id: int) -> list[Review]:
    return list(
        session.scalars(select(Review).where(Review.experiment_id == experiment_id).order_by(Review.id))
    )


def experiment_tag(session: Session, experiment_id: int, tag: str) -> ExperimentTag | None:
    return session.get(ExperimentTag, (experiment_id, tag))


def remove_experiment_tag(session: Session, experiment_id: int, tag: str) -> None:
    session.execute(
        delete(ExperimentTag).where(ExperimentTag.experiment_id == experiment_id, ExperimentTag.tag == tag)
    )


def run_tag(session: Session, run_id: int, tag: str) -> RunTag | None:
    return session.get(RunTag, (run_id, tag))


def remove_run_tag(session: Session, run_id: int, tag: str) -> None:
    session.execute(delete(RunTag).where(RunTag.run_id == run_id, RunTag.tag == tag))


def star(session: Session, user_id: int, experiment_id: int) -> Star | None:
    return session.get(Star, (user_id, experiment_id))


def remove_star(session: Session, user_id: int, experiment_id: int) -> None:
    session.execute(delete(Star).where(Star.user_id == user_id, Star.experiment_id == experiment_id))


def activity(session: Session, project_id: int, limit: int) -> list[Activity]:
    """The project's feed, newest first."""
    stmt = select(Activity).where(Activity.project_id == project_id).order_by(Activity.id.desc()).limit(limit)
    return list(session.scalars(stmt))


def run_names(session: Session, run_ids: set[int]) -> dict[int, str]:
    """The names of those runs that have one (the feed shows a run by its name)."""
    if not run_ids:
        return {}
    stmt = select(Run.id, Run.name).where(Run.id.in_(sorted(run_ids)), Run.name.is_not(None))
    return {run_id: name for run_id, name in session.execute(stmt) if name is not None}
