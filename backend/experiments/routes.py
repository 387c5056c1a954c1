from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response, status
from fastapi.responses import StreamingResponse

from backend.auth.dependencies import PrincipalDep
from backend.experiments import export, listing, present, service, table
from backend.experiments.schemas import (
    ExperimentCreate,
    ExperimentDetail,
    ExperimentPage,
    Preview,
    RunsTable,
)
from backend.exports import tables
from backend.exports.schemas import MEDIA_TYPES, ExportFormat
from backend.http.deps import Id, SessionDep, SettingsDep, WakeDispatcher
from common.runs import RunStatus

router = APIRouter(tags=["experiments"])


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
    return present.detail(session, principal, settings.heartbeat_timeout, experiment)


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
    return listing.page(
        session,
        principal,
        settings,
        project=project,
        kind=kind,
        q=q,
        sort=sort,
        desc=order == "desc",
        limit=limit,
        cursor_=cursor_,
    )


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
    experiment = service.get_visible(session, principal, experiment_id)
    return present.detail(session, principal, settings.heartbeat_timeout, experiment, with_runs)


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
    """The experiment's runs table as a file: run_id, number (1-based), name, status, attempt (counted
    against max_attempts), released (handed back at a worker's shutdown, not counted), created_at,
    started_at, finished_at, duration_s, then params.<name> and metrics.<key> (latest values) columns.
    CSV text cells that a spreadsheet would run as a formula (=, +, -, @) start with a '."""
    experiment = service.get_visible(session, principal, experiment_id)
    columns = export.runs_columns(session, experiment, set(statuses) if statuses else None)
    headers = {"Content-Disposition": tables.content_disposition(export.filename(experiment, format.value))}
    if format is ExportFormat.parquet:
        return Response(tables.parquet_bytes(columns), media_type=MEDIA_TYPES[format], headers=headers)
    return StreamingResponse(tables.csv_chunks(columns), media_type=MEDIA_TYPES[format], headers=headers)
