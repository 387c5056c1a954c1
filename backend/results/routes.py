"""Typed result records posted by workers (types declared by each kind's manifest) and read by the
dashboard."""

from __future__ import annotations

from fastapi import APIRouter, status

from backend.auth.dependencies import PrincipalDep
from backend.experiments.service import get_visible as get_experiment
from backend.http.deps import Id, SessionDep
from backend.results import service
from backend.results.schemas import ResultIn, ResultPublic

router = APIRouter(tags=["results"])


@router.post(
    "/runs/{run_id}/results",
    response_model=ResultPublic,
    status_code=status.HTTP_201_CREATED,
    operation_id="results-post",
)
def post_result(run_id: Id, body: ResultIn, principal: PrincipalDep, session: SessionDep) -> ResultPublic:
    return service.post(session, principal, run_id, body)


@router.get("/runs/{run_id}/results", response_model=list[ResultPublic], operation_id="results-list_run")
def run_results(
    run_id: Id, principal: PrincipalDep, session: SessionDep, kind: str | None = None
) -> list[ResultPublic]:
    return service.of_run(session, principal, run_id, kind)


@router.get(
    "/experiments/{experiment_id}/results",
    response_model=list[ResultPublic],
    operation_id="results-list_experiment",
)
def experiment_results(
    experiment_id: Id, principal: PrincipalDep, session: SessionDep, kind: str | None = None
) -> list[ResultPublic]:
    experiment = get_experiment(session, principal, experiment_id)
    return service.of_experiment(session, experiment.id, kind)
