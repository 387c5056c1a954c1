"""External runs: a script opens (or resumes) its run here, then drives it through the runs' routes."""

from __future__ import annotations

from fastapi import APIRouter, status

from backend.auth.dependencies import PrincipalDep
from backend.auth.security import make_run_token
from backend.http.deps import Id, SessionDep, SettingsDep
from backend.runs import present
from backend.tracking import service
from backend.tracking.schemas import ExternalRunIn, ExternalRunOut, Provenance

router = APIRouter(tags=["runs"])


@router.post(
    "/projects/{project_id}/runs/external",
    response_model=ExternalRunOut,
    status_code=status.HTTP_201_CREATED,
    operation_id="runs-open_external",
)
def open_external(
    project_id: Id, body: ExternalRunIn, principal: PrincipalDep, session: SessionDep, settings: SettingsDep
) -> ExternalRunOut:
    """Open a run the caller's own script executes (a project member): running at once, never queued to a
    worker. The answer's ``run_token`` reaches this run and attempt only: with it the script posts metrics,
    params, logs and artifacts, sends heartbeats and finishes the run. A run whose heartbeats stop for the
    heartbeat timeout is failed ("crashed"), never requeued; its script resumes it with ``id`` and
    ``resume`` "must" (a new attempt and token; ``last_step`` says where its series stopped)."""
    run, resumed = service.open_run(session, principal, project_id, body)
    token, _ = make_run_token(run.id, run.attempt, settings.secret_key, settings.run_token_ttl_seconds)
    return ExternalRunOut(
        **present.one(session, run, settings.heartbeat_timeout).model_dump(),
        run_token=token,
        resumed=resumed,
        last_step=service.last_step(session, run),
    )


@router.get("/runs/{run_id}/provenance", response_model=Provenance | None, operation_id="runs-provenance")
def get_provenance(run_id: Id, principal: PrincipalDep, session: SessionDep) -> Provenance | None:
    """Where an external run came from (command line, git commit and diff, Python, packages, host), as
    its script sent it when it opened its latest attempt; null for a run a worker executes."""
    return service.provenance(session, principal, run_id)
