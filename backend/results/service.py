"""Result records: validated against the type their kind declares (worker.specs), stored idempotently."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from sqlalchemy.orm import Session

from backend.auth.principal import Principal
from backend.db import utcnow
from backend.errors import Invalid, pydantic_errors
from backend.kinds.service import result_class
from backend.mirror import repository as mirror
from backend.models import Result, Run
from backend.results import repository
from backend.results.schemas import ResultIn, ResultPublic
from backend.runs import service as runs


def public(result: Result, params: dict[str, Any]) -> ResultPublic:
    return ResultPublic(
        id=result.id,
        run_id=result.run_id,
        kind=result.kind,
        payload=result.payload,
        params=params,
        created_at=result.created_at,
    )


def post(session: Session, principal: Principal, run_id: int, body: ResultIn) -> ResultPublic:
    run = runs.get_for_worker(session, principal, run_id)
    schema = result_class(body.kind, ["body", "kind"])
    try:
        payload = schema.model_validate({**body.payload, "kind": body.kind}).model_dump(mode="json")
    except ValidationError as exc:
        errors = pydantic_errors(exc, ["body", "payload"])
        raise Invalid(f"invalid {body.kind} result: {errors[0]['msg']}", errors) from exc
    runs.check_writer(run, body.attempt)
    result = repository.by_key(session, run.id, body.key) if body.key is not None else None
    if result is None:
        result = Result(run_id=run.id, kind=body.kind, payload=payload, key=body.key)
        session.add(result)
    else:  # the same record sent again (a retried post, a resumed attempt): replace, never duplicate
        result.kind, result.payload, result.created_at = body.kind, payload, utcnow()
    if run.status != "running":  # a finished run written to (a notebook): its MLflow mirror has work
        mirror.touch(session, run.id)
    session.flush()
    return public(result, run.params)


def of_run(session: Session, principal: Principal, run_id: int, kind: str | None) -> list[ResultPublic]:
    run: Run = runs.get_visible(session, principal, run_id)
    return [public(r, run.params) for r in repository.of_run(session, run.id, kind)]


def of_experiment(session: Session, experiment_id: int, kind: str | None) -> list[ResultPublic]:
    return [public(r, params) for r, params in repository.of_experiment(session, experiment_id, kind)]
