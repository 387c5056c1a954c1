from __future__ import annotations

import time
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response, status
from fastapi.responses import StreamingResponse

from backend import query
from backend.auth.dependencies import PrincipalDep
from backend.auth.principal import Principal
from backend.db import utcnow
from backend.experiments import export, repository, service, table
from backend.experiments.schemas import (
    ExperimentCreate,
    ExperimentDetail,
    ExperimentPage,
    ExperimentPublic,
    Preview,
    RunsTable,
)
from backend.exports import tables
from backend.exports.schemas import MEDIA_TYPES, ExportFormat
from backend.http import cursor
from backend.http.deps import Id, SessionDep, SettingsDep, WakeDispatcher
from backend.metrics import service as metrics
from backend.models import Experiment
from backend.projects import repository as projects_repo
from backend.projects import service as projects
from backend.query import autoindex
from backend.runs import attempts
from backend.runs.schemas import RunPublic
from common.runs import RunStatus

router = APIRouter(tags=["experiments"])


def present(
    session: SessionDep, principal: Principal, experiments: list[Experiment]
) -> list[ExperimentPublic]:
    ids = [e.id for e in experiments]
    counts = repository.status_counts(session, ids)
    tags = repository.tags_of(session, ids)
    reviews = repository.review_states(session, ids)
    stars = repository.starred(session, principal.user_id, ids)
    return [
        ExperimentPublic(
            id=e.id,
            project_id=e.project_id,
            project=e.project.name,
            name=e.name,
            description=e.description,
            kind=e.kind,
            spec=e.spec,
            sweep=e.sweep,
            author=e.author.username if e.author else None,
            created_at=e.created_at,
            run_count=sum(counts[e.id].values()),
            status_counts=counts[e.id],
            tags=tags[e.id],
            review_state=reviews.get(e.id),
            starred=e.id in stars,
        )
        for e in experiments
    ]


def detail(
    session: SessionDep,
    principal: Principal,
    settings: SettingsDep,
    experiment: Experiment,
    with_runs: bool = True,
) -> ExperimentDetail:
    if not with_runs:
        return ExperimentDetail(**present(session, principal, [experiment])[0].model_dump(), runs=[])
    runs = repository.runs_of(session, experiment.id)
    run_tags = repository.run_tags_of(session, [r.id for r in runs])
    summaries = metrics.summaries(session, runs)
    timings = attempts.timings(session, runs, utcnow(), settings.heartbeat_timeout)
    base = present(session, principal, [experiment])[0]
    return ExperimentDetail(
        **base.model_dump(),
        runs=[RunPublic.of(r, run_tags[r.id], summaries[r.id], timings[r.id]) for r in runs],
    )


@router.post(
    "/experiments",
    response_model=ExperimentDetail,
    status_code=status.HTTP_201_CREATED,
    operation_id="experiments-create",
)
def create_experiment(
    body: ExperimentCreate,
    principal: PrincipalDep,
    session: SessionDep,
    settings: SettingsDep,
    wake: WakeDispatcher,
) -> ExperimentDetail:
    experiment = service.create(session, principal, body, settings)
    session.commit()  # the outbox: runs are committed queued before anything is sent
    wake()
    return detail(session, principal, settings, experiment)


@router.post("/experiments/preview", response_model=Preview, operation_id="experiments-preview")
def preview_experiment(
    body: ExperimentCreate, principal: PrincipalDep, session: SessionDep, settings: SettingsDep
) -> Preview:
    runs = service.resolve(body, settings, session, principal)
    return Preview(count=len(runs), runs=runs[:1000])


@router.get("/experiments", response_model=ExperimentPage, operation_id="experiments-list")
def list_experiments(
    principal: PrincipalDep,
    session: SessionDep,
    settings: SettingsDep,
    project: str | None = None,
    kind: str | None = None,
    q: Annotated[
        str | None,
        Query(
            max_length=4000,
            description="a query-language filter (docs/api.md, Query language): "
            '`kind = "carma" and params.carma.lambda >= 0.1 and created > now - 7d`',
        ),
    ] = None,
    sort: Annotated[
        str,
        Query(
            max_length=500,
            description="created (the default: newest first with order=desc), or any experiment field: "
            "id, name, kind, author, runs, params.<path>; rows without a value come last",
        ),
    ] = "created",
    order: Literal["asc", "desc"] = "desc",
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor_: Annotated[str | None, Query(alias="cursor")] = None,
) -> ExperimentPage:
    project_ids: list[int] | None
    if project is not None:
        p = projects.resolve_project(session, principal, project)
        project_ids = [p.id]
    elif principal.is_admin:
        project_ids = None
    else:
        assert principal.user is not None
        project_ids = projects_repo.visible_project_ids(session, principal.user.id)
    dialect = session.get_bind().dialect.name
    try:
        condition = query.where(query.EXPERIMENTS, q, dialect) if q is not None and q.strip() else None
    except query.QueryError as exc:
        raise query.invalid(exc, "q") from None
    desc = order == "desc"
    started = time.perf_counter()
    if sort in ("created", "created_at", "id"):  # ids grow with creation: a keyset page
        after = cursor.decode_int(cursor_, "id")
        items = repository.page(session, project_ids, kind, limit + 1, after, condition, desc)
        next_cursor = cursor.encode({"id": items[limit - 1].id}) if len(items) > limit else None
    else:
        try:
            ordering = query.order(query.EXPERIMENTS, sort, desc, dialect)
        except query.QueryError as exc:
            raise query.invalid(exc, "sort") from None
        offset = cursor.decode_int(cursor_, "offset") or 0
        items = repository.page_ordered(session, project_ids, kind, condition, ordering, offset, limit + 1)
        next_cursor = cursor.encode({"offset": offset + limit}) if len(items) > limit else None
    # a slow params sort or filter on a large table: its index, built in the background (Postgres)
    autoindex.indexer.observe(
        settings, dialect, query.EXPERIMENTS, sort, desc, q, time.perf_counter() - started
    )
    return ExperimentPage(items=present(session, principal, items[:limit]), next_cursor=next_cursor)


@router.get("/experiments/{experiment_id}", response_model=ExperimentDetail, operation_id="experiments-get")
def get_experiment(
    experiment_id: Id,
    principal: PrincipalDep,
    session: SessionDep,
    settings: SettingsDep,
    with_runs: Annotated[
        bool,
        Query(
            description="false: runs left empty (run_count and status_counts still say how many); "
            "GET .../runs-table has them as columns"
        ),
    ] = True,
) -> ExperimentDetail:
    return detail(
        session, principal, settings, service.get_visible(session, principal, experiment_id), with_runs
    )


@router.get(
    "/experiments/{experiment_id}/runs-table", response_model=RunsTable, operation_id="experiments-runs-table"
)
def get_runs_table(experiment_id: Id, principal: PrincipalDep, session: SessionDep) -> Response:
    """The experiment's runs as columns (the dashboard's runs table): what a table of 10,000 runs shows,
    without their specs, in one answer."""
    experiment = service.get_visible(session, principal, experiment_id)
    # RunsTable's JSON written from raw rows and kept until the experiment changes
    # (backend/experiments/table.py); the response_model documents it
    data = table.cached_runs_table_json(session, experiment.id, experiment.created_at)
    return Response(data, media_type="application/json")


@router.get(
    "/experiments/{experiment_id}/runs/export",
    operation_id="experiments-runs-export",
    response_class=Response,
    responses={
        200: {
            "content": {
                MEDIA_TYPES[ExportFormat.csv]: {"schema": {"type": "string"}},
                MEDIA_TYPES[ExportFormat.parquet]: {"schema": {"type": "string", "format": "binary"}},
            },
            "description": "the runs table as a file (Content-Disposition names it)",
        }
    },
)
def export_runs(
    experiment_id: Id,
    principal: PrincipalDep,
    session: SessionDep,
    format: Annotated[ExportFormat, Query(description="csv (streamed) or parquet")] = ExportFormat.csv,
    statuses: Annotated[
        list[RunStatus] | None,
        Query(alias="status", description="only runs of these statuses (repeat it); all when absent"),
    ] = None,
) -> Response:
    """The experiment's runs table as a file: run_id, number (1-based), name, status, attempt, created_at,
    started_at, finished_at, duration_s, then params.<name> and metrics.<key> (latest values) columns.
    CSV text cells that a spreadsheet would run as a formula (=, +, -, @) start with a '."""
    experiment = service.get_visible(session, principal, experiment_id)
    columns = export.runs_columns(session, experiment, set(statuses) if statuses else None)
    headers = {"Content-Disposition": tables.content_disposition(export.filename(experiment, format.value))}
    if format is ExportFormat.parquet:
        return Response(tables.parquet_bytes(columns), media_type=MEDIA_TYPES[format], headers=headers)
    return StreamingResponse(tables.csv_chunks(columns), media_type=MEDIA_TYPES[format], headers=headers)
