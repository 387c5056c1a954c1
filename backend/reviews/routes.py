"""Review: markdown comments, review states, tags, stars and the project activity feed."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, status
from sqlalchemy import delete, select

from backend.deps import CurrentUser, Id, PrincipalDep, SessionDep
from backend.experiments import repository as experiments_repo
from backend.experiments.routes import get_visible as get_experiment
from backend.models import Activity, Comment, ExperimentTag, Review, RunTag, Star
from backend.projects import service as projects
from backend.reviews.schemas import ActivityPublic, CommentIn, CommentPublic, ReviewIn, ReviewPublic
from backend.runs import service as runs

router = APIRouter(tags=["reviews"])
Tag = Annotated[str, Path(min_length=1, max_length=100, pattern=r"^[\w.:+-]+$")]


def _comment(c: Comment) -> CommentPublic:
    return CommentPublic(
        id=c.id,
        experiment_id=c.experiment_id,
        run_id=c.run_id,
        author=c.author.username if c.author else None,
        body=c.body,
        created_at=c.created_at,
    )


@router.get(
    "/experiments/{experiment_id}/comments",
    response_model=list[CommentPublic],
    operation_id="reviews-experiment_comments",
)
def experiment_comments(
    experiment_id: Id, principal: PrincipalDep, session: SessionDep
) -> list[CommentPublic]:
    e = get_experiment(session, principal, experiment_id)
    stmt = select(Comment).where(Comment.experiment_id == e.id, Comment.run_id.is_(None)).order_by(Comment.id)
    return [_comment(c) for c in session.scalars(stmt)]


@router.post(
    "/experiments/{experiment_id}/comments",
    response_model=CommentPublic,
    status_code=status.HTTP_201_CREATED,
    operation_id="reviews-comment_experiment",
)
def comment_experiment(
    experiment_id: Id, body: CommentIn, principal: PrincipalDep, user: CurrentUser, session: SessionDep
) -> CommentPublic:
    e = get_experiment(session, principal, experiment_id, "member")
    c = Comment(project_id=e.project_id, experiment_id=e.id, author_id=user.id, body=body.body)
    session.add(c)
    session.add(
        Activity(
            project_id=e.project_id,
            type="commented",
            actor_id=user.id,
            experiment_id=e.id,
            message=f"{user.username} commented on experiment {e.name!r}",
        )
    )
    session.flush()
    return _comment(c)


@router.get(
    "/runs/{run_id}/comments", response_model=list[CommentPublic], operation_id="reviews-run_comments"
)
def run_comments(run_id: Id, principal: PrincipalDep, session: SessionDep) -> list[CommentPublic]:
    r = runs.get_visible(session, principal, run_id)
    return [
        _comment(c)
        for c in session.scalars(select(Comment).where(Comment.run_id == r.id).order_by(Comment.id))
    ]


@router.post(
    "/runs/{run_id}/comments",
    response_model=CommentPublic,
    status_code=status.HTTP_201_CREATED,
    operation_id="reviews-comment_run",
)
def comment_run(
    run_id: Id, body: CommentIn, principal: PrincipalDep, user: CurrentUser, session: SessionDep
) -> CommentPublic:
    r = runs.get_visible(session, principal, run_id, "member")
    c = Comment(
        project_id=r.project_id, experiment_id=r.experiment_id, run_id=r.id, author_id=user.id, body=body.body
    )
    session.add(c)
    session.add(
        Activity(
            project_id=r.project_id,
            type="commented",
            actor_id=user.id,
            experiment_id=r.experiment_id,
            run_id=r.id,
            message=f"{user.username} commented on run {r.id}",
        )
    )
    session.flush()
    return _comment(c)


def _review(r: Review) -> ReviewPublic:
    return ReviewPublic(
        id=r.id,
        experiment_id=r.experiment_id,
        reviewer=r.reviewer.username if r.reviewer else None,
        state=r.state,
        body=r.body,
        created_at=r.created_at,
    )


@router.put("/experiments/{experiment_id}/review", response_model=ReviewPublic, operation_id="reviews-review")
def review_experiment(
    experiment_id: Id, body: ReviewIn, principal: PrincipalDep, user: CurrentUser, session: SessionDep
) -> ReviewPublic:
    e = get_experiment(session, principal, experiment_id, "member")
    r = Review(experiment_id=e.id, reviewer_id=user.id, state=body.state, body=body.body)
    session.add(r)
    label = "approved" if body.state == "approved" else "requested changes on"
    session.add(
        Activity(
            project_id=e.project_id,
            type="reviewed",
            actor_id=user.id,
            experiment_id=e.id,
            message=f"{user.username} {label} experiment {e.name!r}",
        )
    )
    session.flush()
    return _review(r)


@router.get(
    "/experiments/{experiment_id}/reviews", response_model=list[ReviewPublic], operation_id="reviews-list"
)
def list_reviews(experiment_id: Id, principal: PrincipalDep, session: SessionDep) -> list[ReviewPublic]:
    e = get_experiment(session, principal, experiment_id)
    return [
        _review(r)
        for r in session.scalars(select(Review).where(Review.experiment_id == e.id).order_by(Review.id))
    ]


@router.put(
    "/experiments/{experiment_id}/tags/{tag}", response_model=list[str], operation_id="reviews-tag_experiment"
)
def tag_experiment(experiment_id: Id, tag: Tag, principal: PrincipalDep, session: SessionDep) -> list[str]:
    e = get_experiment(session, principal, experiment_id, "member")
    if session.get(ExperimentTag, (e.id, tag)) is None:
        session.add(ExperimentTag(experiment_id=e.id, tag=tag))
        session.flush()
    return experiments_repo.tags_of(session, [e.id])[e.id]


@router.delete(
    "/experiments/{experiment_id}/tags/{tag}",
    response_model=list[str],
    operation_id="reviews-untag_experiment",
)
def untag_experiment(experiment_id: Id, tag: Tag, principal: PrincipalDep, session: SessionDep) -> list[str]:
    e = get_experiment(session, principal, experiment_id, "member")
    session.execute(
        delete(ExperimentTag).where(ExperimentTag.experiment_id == e.id, ExperimentTag.tag == tag)
    )
    return experiments_repo.tags_of(session, [e.id])[e.id]


@router.put("/runs/{run_id}/tags/{tag}", response_model=list[str], operation_id="reviews-tag_run")
def tag_run(run_id: Id, tag: Tag, principal: PrincipalDep, session: SessionDep) -> list[str]:
    r = runs.get_visible(session, principal, run_id, "member")
    if session.get(RunTag, (r.id, tag)) is None:
        session.add(RunTag(run_id=r.id, tag=tag))
        session.flush()
    return experiments_repo.run_tags_of(session, [r.id])[r.id]


@router.delete("/runs/{run_id}/tags/{tag}", response_model=list[str], operation_id="reviews-untag_run")
def untag_run(run_id: Id, tag: Tag, principal: PrincipalDep, session: SessionDep) -> list[str]:
    r = runs.get_visible(session, principal, run_id, "member")
    session.execute(delete(RunTag).where(RunTag.run_id == r.id, RunTag.tag == tag))
    return experiments_repo.run_tags_of(session, [r.id])[r.id]


@router.put(
    "/experiments/{experiment_id}/star", status_code=status.HTTP_204_NO_CONTENT, operation_id="reviews-star"
)
def star(experiment_id: Id, principal: PrincipalDep, user: CurrentUser, session: SessionDep) -> None:
    e = get_experiment(session, principal, experiment_id)
    if session.get(Star, (user.id, e.id)) is None:
        session.add(Star(user_id=user.id, experiment_id=e.id))


@router.delete(
    "/experiments/{experiment_id}/star", status_code=status.HTTP_204_NO_CONTENT, operation_id="reviews-unstar"
)
def unstar(experiment_id: Id, principal: PrincipalDep, user: CurrentUser, session: SessionDep) -> None:
    e = get_experiment(session, principal, experiment_id)
    session.execute(delete(Star).where(Star.user_id == user.id, Star.experiment_id == e.id))


@router.get(
    "/projects/{project_id}/activity", response_model=list[ActivityPublic], operation_id="reviews-activity"
)
def activity(
    project_id: Id,
    principal: PrincipalDep,
    session: SessionDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[ActivityPublic]:
    projects.require_role(session, principal, project_id, "viewer", f"project {project_id}")
    stmt = select(Activity).where(Activity.project_id == project_id).order_by(Activity.id.desc()).limit(limit)
    return [
        ActivityPublic(
            id=a.id,
            type=a.type,
            actor=a.actor.username if a.actor else None,
            experiment_id=a.experiment_id,
            run_id=a.run_id,
            message=a.message,
            created_at=a.created_at,
        )
        for a in session.scalars(stmt)
    ]
