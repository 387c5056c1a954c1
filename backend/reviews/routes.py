"""Review: markdown comments, review states, tags, stars and the project activity feed.

Each route checks the caller's role on its experiment, run or project, then hands over to the service.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, status

from backend.auth.dependencies import CurrentUser, PrincipalDep
from backend.experiments.service import get_visible as get_experiment
from backend.http.deps import Id, SessionDep
from backend.projects import service as projects
from backend.reviews import service
from backend.reviews.schemas import ActivityPublic, CommentIn, CommentPublic, ReviewIn, ReviewPublic
from backend.runs import service as runs

router = APIRouter(tags=["reviews"])
Tag = Annotated[str, Path(min_length=1, max_length=100, pattern=r"^[\w.:+-]+$")]


@router.get(
    "/experiments/{experiment_id}/comments",
    response_model=list[CommentPublic],
    operation_id="reviews-experiment_comments",
)
def experiment_comments(
    experiment_id: Id, principal: PrincipalDep, session: SessionDep
) -> list[CommentPublic]:
    experiment = get_experiment(session, principal, experiment_id)
    return service.experiment_comments(session, experiment)


@router.post(
    "/experiments/{experiment_id}/comments",
    response_model=CommentPublic,
    status_code=status.HTTP_201_CREATED,
    operation_id="reviews-comment_experiment",
)
def comment_experiment(
    experiment_id: Id, body: CommentIn, principal: PrincipalDep, user: CurrentUser, session: SessionDep
) -> CommentPublic:
    experiment = get_experiment(session, principal, experiment_id, "member")
    return service.comment_experiment(session, experiment, user, body)


@router.get(
    "/runs/{run_id}/comments", response_model=list[CommentPublic], operation_id="reviews-run_comments"
)
def run_comments(run_id: Id, principal: PrincipalDep, session: SessionDep) -> list[CommentPublic]:
    return service.run_comments(session, runs.get_visible(session, principal, run_id))


@router.post(
    "/runs/{run_id}/comments",
    response_model=CommentPublic,
    status_code=status.HTTP_201_CREATED,
    operation_id="reviews-comment_run",
)
def comment_run(
    run_id: Id, body: CommentIn, principal: PrincipalDep, user: CurrentUser, session: SessionDep
) -> CommentPublic:
    run = runs.get_visible(session, principal, run_id, "member")
    return service.comment_run(session, run, user, body)


@router.put("/experiments/{experiment_id}/review", response_model=ReviewPublic, operation_id="reviews-review")
def review_experiment(
    experiment_id: Id, body: ReviewIn, principal: PrincipalDep, user: CurrentUser, session: SessionDep
) -> ReviewPublic:
    experiment = get_experiment(session, principal, experiment_id, "member")
    return service.review(session, experiment, user, body)


@router.get(
    "/experiments/{experiment_id}/reviews", response_model=list[ReviewPublic], operation_id="reviews-list"
)
def list_reviews(experiment_id: Id, principal: PrincipalDep, session: SessionDep) -> list[ReviewPublic]:
    return service.reviews(session, get_experiment(session, principal, experiment_id))


@router.put(
    "/experiments/{experiment_id}/tags/{tag}", response_model=list[str], operation_id="reviews-tag_experiment"
)
def tag_experiment(experiment_id: Id, tag: Tag, principal: PrincipalDep, session: SessionDep) -> list[str]:
    experiment = get_experiment(session, principal, experiment_id, "member")
    return service.tag_experiment(session, experiment, tag)


@router.delete(
    "/experiments/{experiment_id}/tags/{tag}",
    response_model=list[str],
    operation_id="reviews-untag_experiment",
)
def untag_experiment(experiment_id: Id, tag: Tag, principal: PrincipalDep, session: SessionDep) -> list[str]:
    experiment = get_experiment(session, principal, experiment_id, "member")
    return service.untag_experiment(session, experiment, tag)


@router.put("/runs/{run_id}/tags/{tag}", response_model=list[str], operation_id="reviews-tag_run")
def tag_run(run_id: Id, tag: Tag, principal: PrincipalDep, session: SessionDep) -> list[str]:
    return service.tag_run(session, runs.get_visible(session, principal, run_id, "member"), tag)


@router.delete("/runs/{run_id}/tags/{tag}", response_model=list[str], operation_id="reviews-untag_run")
def untag_run(run_id: Id, tag: Tag, principal: PrincipalDep, session: SessionDep) -> list[str]:
    return service.untag_run(session, runs.get_visible(session, principal, run_id, "member"), tag)


@router.put(
    "/experiments/{experiment_id}/star", status_code=status.HTTP_204_NO_CONTENT, operation_id="reviews-star"
)
def star(experiment_id: Id, principal: PrincipalDep, user: CurrentUser, session: SessionDep) -> None:
    service.star(session, get_experiment(session, principal, experiment_id), user)


@router.delete(
    "/experiments/{experiment_id}/star", status_code=status.HTTP_204_NO_CONTENT, operation_id="reviews-unstar"
)
def unstar(experiment_id: Id, principal: PrincipalDep, user: CurrentUser, session: SessionDep) -> None:
    service.unstar(session, get_experiment(session, principal, experiment_id), user)


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
    return service.activity(session, project_id, limit)
