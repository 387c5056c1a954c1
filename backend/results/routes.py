"""Typed result records posted by workers (schemas in worker.specs.RESULTS) and read by the dashboard."""

from __future__ import annotations

from fastapi import APIRouter, status
from pydantic import ValidationError
from sqlalchemy import select

from backend.db import utcnow
from backend.deps import Id, PrincipalDep, SessionDep
from backend.errors import Invalid, pydantic_errors
from backend.experiments.routes import get_visible as get_experiment
from backend.models import Result, Run
from backend.results.schemas import ResultIn, ResultPublic
from backend.runs import service as runs
from worker.specs import RESULTS

router = APIRouter(tags=["results"])


@router.post(
    "/runs/{run_id}/results",
    response_model=ResultPublic,
    status_code=status.HTTP_201_CREATED,
    operation_id="results-post",
)
def post_result(run_id: Id, body: ResultIn, principal: PrincipalDep, session: SessionDep) -> ResultPublic:
    run = runs.get_for_worker(session, principal, run_id)
    schema = RESULTS.get(body.kind)
    if schema is None:
        known = ", ".join(sorted(RESULTS))
        raise Invalid(
            f"unknown result kind {body.kind!r}; known: {known}",
            [{"loc": ["body", "kind"], "msg": f"unknown result kind {body.kind!r}", "type": "unknown_kind"}],
        )
    try:
        payload = schema.model_validate({"kind": body.kind, **body.payload}).model_dump(mode="json")
    except ValidationError as exc:
        errors = pydantic_errors(exc, ["body", "payload"])
        raise Invalid(f"invalid {body.kind} result: {errors[0]['msg']}", errors) from exc
    runs.check_writer(run, body.attempt)
    result = None
    if body.key is not None:
        result = session.scalars(
            select(Result).where(Result.run_id == run.id, Result.key == body.key)
        ).first()
    if result is None:
        result = Result(run_id=run.id, kind=body.kind, payload=payload, key=body.key)
        session.add(result)
    else:  # the same record sent again (a retried post, a resumed attempt): replace, never duplicate
        result.kind, result.payload, result.created_at = body.kind, payload, utcnow()
    session.flush()
    return ResultPublic(
        id=result.id,
        run_id=run.id,
        kind=result.kind,
        payload=payload,
        params=run.params,
        created_at=result.created_at,
    )


@router.get("/runs/{run_id}/results", response_model=list[ResultPublic], operation_id="results-list_run")
def run_results(
    run_id: Id, principal: PrincipalDep, session: SessionDep, kind: str | None = None
) -> list[ResultPublic]:
    run = runs.get_visible(session, principal, run_id)
    stmt = select(Result).where(Result.run_id == run.id)
    if kind:
        stmt = stmt.where(Result.kind == kind)
    return [
        ResultPublic(
            id=r.id,
            run_id=r.run_id,
            kind=r.kind,
            payload=r.payload,
            params=run.params,
            created_at=r.created_at,
        )
        for r in session.scalars(stmt.order_by(Result.id))
    ]


@router.get(
    "/experiments/{experiment_id}/results",
    response_model=list[ResultPublic],
    operation_id="results-list_experiment",
)
def experiment_results(
    experiment_id: Id, principal: PrincipalDep, session: SessionDep, kind: str | None = None
) -> list[ResultPublic]:
    experiment = get_experiment(session, principal, experiment_id)
    stmt = (
        select(Result, Run.params)
        .join(Run, Run.id == Result.run_id)
        .where(Run.experiment_id == experiment.id)
    )
    if kind:
        stmt = stmt.where(Result.kind == kind)
    return [
        ResultPublic(
            id=r.id, run_id=r.run_id, kind=r.kind, payload=r.payload, params=params, created_at=r.created_at
        )
        for r, params in session.execute(stmt.order_by(Result.id))
    ]
