from __future__ import annotations

import math
import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, status

from backend import query
from backend.auth.dependencies import PrincipalDep
from backend.auth.security import make_run_token
from backend.db import utcnow
from backend.errors import Invalid, NotFound
from backend.experiments import repository as experiments_repo
from backend.http import cursor
from backend.http.deps import Id, OptionalId, SessionDep, SettingsDep, WakeDispatcher
from backend.metrics import service as metrics
from backend.models import Experiment, MetricLatest, Run
from backend.projects import repository as projects_repo
from backend.projects import service as projects
from backend.query import autoindex
from backend.runs import attempts, groups, repository, service
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
from common.runs import RUN_STATUSES

router = APIRouter(prefix="/runs", tags=["runs"])


def _present(session: SessionDep, settings: SettingsDep, runs: list[Run]) -> list[RunPublic]:
    tags = experiments_repo.run_tags_of(session, [r.id for r in runs])
    summaries = metrics.summaries(session, runs)
    timings = attempts.timings(session, runs, utcnow(), settings.heartbeat_timeout)
    return [RunPublic.of(r, tags[r.id], summaries[r.id], timings[r.id]) for r in runs]


def _metric_cursor(raw: str | None) -> tuple[tuple[float, int] | None, int | None]:
    """A metric sort's cursor: ``((value, id), None)`` inside the runs with a value, ``(None, id)`` among
    those without; ``(None, None)`` without a cursor. Invalid (422) for any other shape."""
    data = cursor.decode(raw)
    if data is None:
        return None, None
    if set(data) == {"mid"}:
        return None, cursor.decode_int(raw, "mid")
    value = data.get("mv")
    if set(data) == {"mv", "id"} and isinstance(value, int | float) and not isinstance(value, bool):
        run_id = cursor.decode_int(raw, "id")
        if run_id is not None and math.isfinite(value):
            return (float(value), run_id), None
    raise Invalid(
        "invalid cursor",
        [{"loc": ["query", "cursor"], "msg": "not a cursor from next_cursor", "type": "cursor"}],
    )


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
    statuses = [s for v in status_ or [] for s in v.split(",") if s]
    for s in statuses:
        if s not in RUN_STATUSES:
            raise Invalid(
                f"status {s!r} is not one of {', '.join(RUN_STATUSES)}",
                [{"loc": ["query", "status"], "msg": f"unknown status {s!r}", "type": "enum"}],
            )
    project_ids: list[int] | None
    if experiment_id is not None:
        experiment = session.get(Experiment, experiment_id)
        if experiment is None:  # the same answer as another project's experiment: ids cannot be probed
            raise NotFound(f"experiment {experiment_id} not found")
        projects.require_role(
            session, principal, experiment.project_id, "viewer", f"experiment {experiment_id}"
        )
        project_ids = None
    elif project is not None:
        project_ids = [projects.resolve_project(session, principal, project).id]
    elif principal.is_admin:
        project_ids = None
    else:
        assert principal.user is not None
        project_ids = projects_repo.visible_project_ids(session, principal.user.id)
    stmt = repository.filtered(project_ids, experiment_id, statuses, kind, tag)
    dialect = session.get_bind().dialect.name
    desc = order == "desc"
    try:
        if q is not None and q.strip():
            stmt = stmt.where(query.where(query.RUNS, q, dialect))
    except query.QueryError as exc:
        raise query.invalid(exc, "q") from None
    if metrics is not None and group_by is None:
        raise Invalid(
            "metrics: aggregates metric columns over groups; it needs group_by",
            [{"loc": ["query", "metrics"], "msg": "metrics needs group_by", "type": "group_by"}],
        )
    started = time.perf_counter()
    if group_by is not None:
        offset = cursor.decode_int(cursor_, "offset") or 0
        queried = q is not None and bool(q.strip())
        # no filter but the projects: the default grouping may come from their stored summaries
        whole = None
        if project_ids and experiment_id is None and not statuses and not kind and not tag and not queried:
            whole = project_ids
        found, more = groups.page(
            session, stmt, group_by, metrics, sort, desc, offset, limit, queried, whole, settings
        )
        autoindex.indexer.observe(settings, dialect, query.RUNS, None, desc, q, time.perf_counter() - started)
        nxt = cursor.encode({"offset": offset + limit}) if more else None
        return RunPage(items=[], next_cursor=nxt, groups=found)
    by_metric: tuple[str, Any] | None = None
    if sort.startswith("metric:"):  # the older spelling of metrics.<key>: any key but the old summary's own
        key = sort.removeprefix("metric:")
        if not key or key.startswith("_"):
            raise Invalid(
                f"sort {sort!r}: metric:<key> needs a metric key",
                [{"loc": ["query", "sort"], "msg": "metric:<key> needs a metric key", "type": "sort"}],
            )
        by_metric = (key, MetricLatest.value)
    elif sort.startswith("metrics.") or sort[:4] in ("min(", "max(") or sort.startswith("last("):
        try:
            by_metric = query.metric_sort(sort)
        except query.QueryError as exc:
            raise query.invalid(exc, "sort") from None
    if sort in ("created_at", "id"):
        runs = repository.page_by_id(session, stmt, desc, cursor.decode_int(cursor_, "id"), limit + 1)
        nxt = cursor.encode({"id": runs[limit - 1].id}) if len(runs) > limit else None
    elif by_metric is not None:  # a keyset walk of metric_latest's (key, value) index
        key, column = by_metric
        after, after_missing = _metric_cursor(cursor_)
        rows = repository.page_by_metric(session, stmt, key, column, desc, after, after_missing, limit + 1)
        runs = [run for run, _ in rows]
        nxt = None
        if len(rows) > limit:
            last, value = rows[limit - 1]
            nxt = cursor.encode({"mid": last.id} if value is None else {"mv": value, "id": last.id})
    else:
        if sort == "finished_at":
            ordering = query.order(query.RUNS, "finished", desc, dialect)
        else:
            try:
                ordering = query.order(query.RUNS, sort, desc, dialect)
            except query.QueryError as exc:
                raise query.invalid(exc, "sort") from None
        offset = cursor.decode_int(cursor_, "offset") or 0
        runs = repository.page_ordered(session, stmt, ordering, offset, limit + 1)
        nxt = cursor.encode({"offset": offset + limit}) if len(runs) > limit else None
    # a slow params sort or filter on a large table: its index, built in the background (Postgres)
    autoindex.indexer.observe(settings, dialect, query.RUNS, sort, desc, q, time.perf_counter() - started)
    return RunPage(items=_present(session, settings, runs[:limit]), next_cursor=nxt)


@router.get("/{run_id}", response_model=RunPublic, operation_id="runs-get")
def get_run(run_id: Id, principal: PrincipalDep, session: SessionDep, settings: SettingsDep) -> RunPublic:
    return _present(session, settings, [service.get_visible(session, principal, run_id)])[0]


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
        return _present(session, settings, [run])[0]
    run = service.get_visible(session, principal, run_id, "member")
    if "name" in body.model_fields_set:
        run = service.rename(session, principal, run, body.name)
    return _present(session, settings, [run])[0]


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
    return _present(session, settings, [run])[0]


@router.post("/{run_id}/retry", response_model=RunPublic, operation_id="runs-retry")
def retry_run(
    run_id: Id, principal: PrincipalDep, session: SessionDep, settings: SettingsDep, request: Request
) -> RunPublic:
    run = service.retry(session, service.get_visible(session, principal, run_id, "member"))
    session.commit()
    dispatcher = getattr(request.app.state, "dispatcher", None)
    if dispatcher is not None:
        dispatcher.wake()
    return _present(session, settings, [run])[0]


@router.post("/{run_id}/claim", response_model=ClaimOut, operation_id="runs-claim")
def claim_run(
    run_id: Id, body: ClaimIn, principal: PrincipalDep, session: SessionDep, settings: SettingsDep
) -> ClaimOut:
    """A worker takes the run's queued attempt; the answer carries the token that attempt's process works
    with (this run's routes only, valid while the attempt runs): the worker token stays with the worker."""
    run = service.claim(session, service.get_for_worker(session, principal, run_id, lifecycle=True), body)
    token, _ = make_run_token(run.id, run.attempt, settings.secret_key, settings.run_token_ttl_seconds)
    return ClaimOut(**_present(session, settings, [run])[0].model_dump(), run_token=token)


@router.post("/{run_id}/heartbeat", response_model=HeartbeatOut, operation_id="runs-heartbeat")
def heartbeat(run_id: Id, body: HeartbeatIn, principal: PrincipalDep, session: SessionDep) -> HeartbeatOut:
    run = service.get_for_worker(session, principal, run_id, lifecycle=True)
    return HeartbeatOut(cancel_requested=service.heartbeat(session, run, body))


@router.post("/{run_id}/finish", response_model=RunPublic, operation_id="runs-finish")
def finish_run(
    run_id: Id, body: FinishIn, principal: PrincipalDep, session: SessionDep, settings: SettingsDep
) -> RunPublic:
    return _present(
        session,
        settings,
        [service.finish(session, service.get_for_worker(session, principal, run_id, lifecycle=True), body)],
    )[0]


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
    return _present(session, settings, [run])[0]


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
    items = repository.logs_after(session, run.id, after, limit)
    last = items[-1].id if items else max(after, 0)
    return LogsPage(items=[LogLine(seq=i.id, time=i.time, line=i.line) for i in items], last_seq=last)
