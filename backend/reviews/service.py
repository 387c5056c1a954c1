"""Reviewing experiments and runs: comments, review states, tags, stars, and the feed they write to.

The route checks the caller's role on the experiment or run and hands it over; nothing here commits
(the request's session commits when the route returns, backend/http/deps.py).
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from backend import db
from backend.activity import feed
from backend.experiments import repository as experiments_repo
from backend.models import Activity, Comment, Experiment, ExperimentTag, Review, Run, RunTag, Star, User
from backend.projects import service as projects
from backend.projects.service import MAX_COMMENTS, MAX_REVIEWS, MAX_TAGS
from backend.reviews import repository
from backend.reviews.schemas import ActivityPublic, CommentIn, CommentPublic, ReviewIn, ReviewPublic
from backend.runs import repository as runs_repo


def comment_public(c: Comment) -> CommentPublic:
    return CommentPublic(
        id=c.id,
        experiment_id=c.experiment_id,
        run_id=c.run_id,
        author=c.author.username if c.author else None,
        body=c.body,
        created_at=c.created_at,
    )


def review_public(r: Review) -> ReviewPublic:
    return ReviewPublic(
        id=r.id,
        experiment_id=r.experiment_id,
        reviewer=r.reviewer.username if r.reviewer else None,
        state=r.state,
        body=r.body,
        created_at=r.created_at,
    )


def activity_public(a: Activity, run_name: str | None = None) -> ActivityPublic:
    return ActivityPublic(
        id=a.id,
        type=a.type,
        actor=a.actor.username if a.actor else None,
        experiment_id=a.experiment_id,
        run_id=a.run_id,
        run_name=run_name,
        claim_id=a.claim_id,
        message=a.message,
        created_at=a.created_at,
    )


# ------------------------------------------------------------------------------------------ comments

_DISCUSS = "carry the discussion on in a report or a claim"


def experiment_comments(session: Session, experiment: Experiment) -> list[CommentPublic]:
    return [comment_public(c) for c in repository.experiment_comments(session, experiment.id)]


def comment_experiment(
    session: Session, experiment: Experiment, user: User, body: CommentIn
) -> CommentPublic:
    db.lock_row(session, Experiment.id, experiment.id)
    comment = Comment(
        project_id=experiment.project_id, experiment_id=experiment.id, author_id=user.id, body=body.body
    )
    session.add(comment)
    session.flush()
    held = db.count_rows(session, Comment, Comment.experiment_id == experiment.id, Comment.run_id.is_(None))
    projects.check_held(
        held, MAX_COMMENTS, f"experiment {experiment.id}", "comments", ["path", "experiment_id"], _DISCUSS
    )
    feed.record(
        session,
        experiment.project_id,
        "commented",
        f"{user.username} commented on experiment {experiment.name!r}",
        actor_id=user.id,
        experiment_id=experiment.id,
    )
    session.flush()
    return comment_public(comment)


def run_comments(session: Session, run: Run) -> list[CommentPublic]:
    return [comment_public(c) for c in repository.run_comments(session, run.id)]


def comment_run(session: Session, run: Run, user: User, body: CommentIn) -> CommentPublic:
    db.lock_row(session, Run.id, run.id)
    comment = Comment(
        project_id=run.project_id,
        experiment_id=run.experiment_id,
        run_id=run.id,
        author_id=user.id,
        body=body.body,
    )
    session.add(comment)
    session.flush()
    held = db.count_rows(session, Comment, Comment.run_id == run.id)
    projects.check_held(held, MAX_COMMENTS, f"run {run.id}", "comments", ["path", "run_id"], _DISCUSS)
    feed.record(
        session,
        run.project_id,
        "commented",
        f"{user.username} commented on run {run.id}",
        actor_id=user.id,
        experiment_id=run.experiment_id,
        run_id=run.id,
    )
    session.flush()
    return comment_public(comment)


# ------------------------------------------------------------------------------------------- reviews


def review(session: Session, experiment: Experiment, user: User, body: ReviewIn) -> ReviewPublic:
    """Every review is kept; the latest one is the experiment's review state."""
    db.lock_row(session, Experiment.id, experiment.id)
    r = Review(experiment_id=experiment.id, reviewer_id=user.id, state=body.state, body=body.body)
    session.add(r)
    session.flush()
    held = db.count_rows(session, Review, Review.experiment_id == experiment.id)
    projects.check_held(
        held, MAX_REVIEWS, f"experiment {experiment.id}", "reviews", ["path", "experiment_id"], _DISCUSS
    )
    label = "approved" if body.state == "approved" else "requested changes on"
    feed.record(
        session,
        experiment.project_id,
        "reviewed",
        f"{user.username} {label} experiment {experiment.name!r}",
        actor_id=user.id,
        experiment_id=experiment.id,
    )
    session.flush()
    return review_public(r)


def reviews(session: Session, experiment: Experiment) -> list[ReviewPublic]:
    return [review_public(r) for r in repository.reviews_of(session, experiment.id)]


# ------------------------------------------------------------------------------------- tags and stars
# Tagging, untagging, starring and unstarring are idempotent: a second call changes nothing.


def tag_experiment(session: Session, experiment: Experiment, tag: str) -> list[str]:
    if repository.experiment_tag(session, experiment.id, tag) is None:
        db.lock_row(session, Experiment.id, experiment.id)
        session.add(ExperimentTag(experiment_id=experiment.id, tag=tag))
        session.flush()
        held = db.count_rows(session, ExperimentTag, ExperimentTag.experiment_id == experiment.id)
        projects.check_held(
            held,
            MAX_TAGS,
            f"experiment {experiment.id}",
            "tags",
            ["path", "tag"],
            "remove one to add another",
        )
    return experiments_repo.tags_of(session, [experiment.id])[experiment.id]


def untag_experiment(session: Session, experiment: Experiment, tag: str) -> list[str]:
    repository.remove_experiment_tag(session, experiment.id, tag)
    return experiments_repo.tags_of(session, [experiment.id])[experiment.id]


def tag_run(session: Session, run: Run, tag: str) -> list[str]:
    if repository.run_tag(session, run.id, tag) is None:
        db.lock_row(session, Run.id, run.id)
        session.add(RunTag(run_id=run.id, tag=tag))
        session.flush()
        held = db.count_rows(session, RunTag, RunTag.run_id == run.id)
        projects.check_held(
            held, MAX_TAGS, f"run {run.id}", "tags", ["path", "tag"], "remove one to add another"
        )
    return runs_repo.run_tags_of(session, [run.id])[run.id]


def untag_run(session: Session, run: Run, tag: str) -> list[str]:
    repository.remove_run_tag(session, run.id, tag)
    return runs_repo.run_tags_of(session, [run.id])[run.id]


def star(session: Session, experiment: Experiment, user: User) -> None:
    if repository.star(session, user.id, experiment.id) is None:
        session.add(Star(user_id=user.id, experiment_id=experiment.id))


def unstar(session: Session, experiment: Experiment, user: User) -> None:
    repository.remove_star(session, user.id, experiment.id)


# ------------------------------------------------------------------------------------------ activity


def activity(session: Session, project_id: int, limit: int) -> list[ActivityPublic]:
    rows = repository.activity(session, project_id, limit)
    names = repository.run_names(session, {a.run_id for a in rows if a.run_id is not None})
    return [activity_public(a, names.get(a.run_id) if a.run_id is not None else None) for a in rows]
