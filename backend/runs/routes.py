from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request, status

from backend.auth.dependencies import PrincipalDep
from backend.auth.security import make_run_token
from backend.http.deps import Id, OptionalId, SessionDep, SettingsDep, WakeDispatcher
from backend.runs import attempts, listing, present, service
from backend.runs import params as run_params
from backend.runs.schemas import (
    AttemptPublic,
    ClaimIn,
    ClaimOut,
    FinishIn,
    HeartbeatIn,
    HeartbeatOut,
    LogLine,
    LogsIn,
    LogsPage,
    ParamsIn,
    ReleaseIn,
    ResumedIn,
    RunPage,
    RunPatch,
    RunPublic,
)

router = APIRouter(prefix="/runs", tags=["runs"])


@router.get("", response_model=RunPage, operation_id="runs-list")
def list_runs(
    principal: PrincipalDep,
    session: SessionDep,
    settings: SettingsDep,
    experiment_id: OptionalId = None,
    status_: Annotated[list[str] | None, Query(alias="status")] = None,
    kind: str | None = None,
    tag: str | None = None,
    project: str | None = None,
    q: Annotated[
        str | None,
        Query(
            max_length=4000,
            description="a query-language filter (docs/api.md, Query language): "
            '`status = "succeeded" and params.train.lr >= 0.1 and max(metrics.acc) > 0.9`',
        ),
    ] = None,
    sort: Annotated[
        str,
        Query(
            max_length=500,
            description="created_at, finished_at, id, metric:<key>, or any query-language field: name, "
            "status, params.<path>, metrics.<key>, min(metrics.<key>), best(metrics.<key>), ...; rows "
            "without a value come last in both orders",
        ),
    ] = "created_at",
    order: Literal["asc", "desc"] = "desc",
    limit: Annotated[int, Query(ge=1, le=5000)] = 100,
    cursor_: Annotated[str | None, Query(alias="cursor")] = None,
    group_by: Annotated[
        str | None,
        Query(
            max_length=2000,
            description="seed groups: comma-separated query-language fields (`params.method,params.lambda`), "
            "or `default` (every spec field except seed). The answer's `groups` (n, run ids, per metric "
            "n/mean/std/95% Student-t CI/min/max), computed in the database; `items` is then empty; `sort` "
            "takes a group field, `n`, `metric-mean:<column>` or `created_at` (the first member)",
        ),
    ] = None,
    metrics: Annotated[
        str | None,
        Query(
            max_length=2000,
            description="with group_by: comma-separated metric columns to aggregate: `metrics.acc` (last), "
            "`max(metrics.acc)`, `best(metrics.loss)`, ...",
        ),
    ] = None,
) -> RunPage:
    return listing.page(
        session,
        principal,
        settings,
        experiment_id=experiment_id,
        status=status_,
        kind=kind,
        tag=tag,
        project=project,
        q=q,
        sort=sort,
        desc=order == "desc",
        limit=limit,
        cursor_=cursor_,
        group_by=group_by,
        metrics=metrics,
    )


@router.get("/{run_id}", response_model=RunPublic, operation_id="runs-get")
def get_run(run_id: Id, principal: PrincipalDep, session: SessionDep, settings: SettingsDep) -> RunPublic:
    return present.one(session, service.get_visible(session, principal, run_id), settings.heartbeat_timeout)


@router.patch("/{run_id}", response_model=RunPublic, operation_id="runs-patch")
def patch_run(
    run_id: Id, body: RunPatch, principal: PrincipalDep, session: SessionDep, settings: SettingsDep
) -> RunPublic:
    """Rename a run (a member of its project): ``name`` is trimmed, and empty or null clears it.

    The run's own token may still call this route as older workers did, with ``mlflow_run_id`` only; that
    value is ignored (runs.mlflow_run_id is the API's MLflow mirror's, backend/mirror/), and a run's
    token may not rename its run."""
    if principal.is_run and "name" not in body.model_fields_set:
        run = service.get_for_worker(session, principal, run_id, lifecycle=True)
        return present.one(session, run, settings.heartbeat_timeout)
    run = service.get_visible(session, principal, run_id, "member")
    if "name" in body.model_fields_set:
        run = service.rename(session, principal, run, body.name)
    return present.one(session, run, settings.heartbeat_timeout)


@router.post("/{run_id}/cancel", response_model=RunPublic, operation_id="runs-cancel")
def cancel_run(
    run_id: Id, principal: PrincipalDep, session: SessionDep, settings: SettingsDep, request: Request
) -> RunPublic:
    run = service.get_visible(session, principal, run_id, "member")
    run, revoke = service.cancel(session, principal, run)
    session.commit()
    dispatcher = getattr(request.app.state, "dispatcher", None)
    if revoke and dispatcher is not None:
        dispatcher.revoke(run.id, run.attempt)
    return present.one(session, run, settings.heartbeat_timeout)


@router.post("/{run_id}/retry", response_model=RunPublic, operation_id="runs-retry")
def retry_run(
    run_id: Id, principal: PrincipalDep, session: SessionDep, settings: SettingsDep, request: Request
) -> RunPublic:
    run = service.retry(session, service.get_visible(session, principal, run_id, "member"))
    session.commit()
    dispatcher = getattr(request.app.state, "dispatcher", None)
    if dispatcher is not None:
        dispatcher.wake()
    return present.one(session, run, settings.heartbeat_timeout)


@router.post("/{run_id}/claim", response_model=ClaimOut, operation_id="runs-claim")
def claim_run(
    run_id: Id, body: ClaimIn, principal: PrincipalDep, session: SessionDep, settings: SettingsDep
) -> ClaimOut:
    """A worker takes the run's queued attempt; the answer carries the token that attempt's process works
    with (this run's routes only, valid while the attempt runs): the worker token stays with the worker."""
    run = service.claim(session, service.get_for_worker(session, principal, run_id, lifecycle=True), body)
    token, _ = make_run_token(run.id, run.attempt, settings.secret_key, settings.run_token_ttl_seconds)
    return ClaimOut(**present.one(session, run, settings.heartbeat_timeout).model_dump(), run_token=token)


@router.post("/{run_id}/heartbeat", response_model=HeartbeatOut, operation_id="runs-heartbeat")
def heartbeat(run_id: Id, body: HeartbeatIn, principal: PrincipalDep, session: SessionDep) -> HeartbeatOut:
    run = service.get_for_worker(session, principal, run_id, lifecycle=True)
    return HeartbeatOut(cancel_requested=service.heartbeat(session, run, body))


@router.post("/{run_id}/finish", response_model=RunPublic, operation_id="runs-finish")
def finish_run(
    run_id: Id, body: FinishIn, principal: PrincipalDep, session: SessionDep, settings: SettingsDep
) -> RunPublic:
    run = service.finish(session, service.get_for_worker(session, principal, run_id, lifecycle=True), body)
    return present.one(session, run, settings.heartbeat_timeout)


@router.post("/{run_id}/release", response_model=RunPublic, operation_id="runs-release")
def release_run(
    run_id: Id,
    body: ReleaseIn,
    principal: PrincipalDep,
    session: SessionDep,
    settings: SettingsDep,
    wake: WakeDispatcher,
) -> RunPublic:
    """The worker gives the run back (it is shutting down; the run checkpointed): queued again."""
    run = service.release(
        session, service.get_for_worker(session, principal, run_id, lifecycle=True), body.attempt
    )
    session.commit()
    wake()
    return present.one(session, run, settings.heartbeat_timeout)


@router.post("/{run_id}/resumed", status_code=status.HTTP_204_NO_CONTENT, operation_id="runs-resumed")
def resumed_run(run_id: Id, body: ResumedIn, principal: PrincipalDep, session: SessionDep) -> None:
    """The attempt resumed from its checkpoint at ``step`` (only its worker knows): a line in the run's
    log, a row in the feed and the attempt history's note; once per attempt, so a retried post is harmless."""
    service.resumed(session, service.get_for_worker(session, principal, run_id, lifecycle=True), body)


@router.get("/{run_id}/attempts", response_model=list[AttemptPublic], operation_id="runs-attempts")
def get_attempts(run_id: Id, principal: PrincipalDep, session: SessionDep) -> list[AttemptPublic]:
    """The run's attempts, the first first: worker, claim, end, duration (downtime excluded), outcome."""
    run = service.get_visible(session, principal, run_id)
    return [AttemptPublic.of(row, run) for row in attempts.of_run(session, run.id)]


@router.post("/{run_id}/logs", status_code=status.HTTP_204_NO_CONTENT, operation_id="runs-post_logs")
def post_logs(run_id: Id, body: LogsIn, principal: PrincipalDep, session: SessionDep) -> None:
    service.add_logs(session, service.get_for_worker(session, principal, run_id), body.lines, body.attempt)


@router.post("/{run_id}/params", status_code=status.HTTP_204_NO_CONTENT, operation_id="runs-post_params")
def post_params(run_id: Id, body: ParamsIn, principal: PrincipalDep, session: SessionDep) -> None:
    """Parameters the run logged itself (``ctx.log_params``: derived values such as parameter counts),
    merged into its ``logged_params`` (flattened; the last value of a key kept) and mirrored to MLflow."""
    run_params.log_params(session, service.get_for_worker(session, principal, run_id), body)


@router.get("/{run_id}/logs", response_model=LogsPage, operation_id="runs-logs")
def get_logs(
    run_id: Id,
    principal: PrincipalDep,
    session: SessionDep,
    after: Annotated[int, Query(ge=0, le=2**62)] = 0,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
) -> LogsPage:
    run = service.get_visible(session, principal, run_id)
    items = service.logs_after(session, run, after, limit)
    last = items[-1].id if items else max(after, 0)
    return LogsPage(items=[LogLine(seq=i.id, time=i.time, line=i.line) for i in items], last_seq=last)
