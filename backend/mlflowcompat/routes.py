"""MLflow's REST tracking API, the part MLflow's own client calls to log, under
``/api/v1/mlflow/{project}``: ``MLFLOW_TRACKING_URI=http://<host>/api/v1/mlflow/<project>`` with an API token
as ``MLFLOW_TRACKING_TOKEN`` (docs/tracking.md, "MLflow's own client").

The paths and messages are MLflow's (``/api/2.0/mlflow/...``, ``/api/2.0/mlflow-artifacts/artifacts/...``):
they are left out of the platform's OpenAPI document, whose generated clients they are not part of; MLflow
documents them. Each route parses, authorizes in the URL's project and calls the service.
"""

from __future__ import annotations

import mimetypes
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import ValidationError
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from backend.artifacts import service as artifacts
from backend.artifacts.dependencies import StoreDep
from backend.auth.dependencies import PrincipalDep
from backend.auth.principal import Principal
from backend.errors import Invalid, NotFound, pydantic_errors
from backend.http.deps import SessionDep, SettingsDep
from backend.http.transfers import copy_body, release_session
from backend.mlflowcompat import service
from backend.mlflowcompat.schemas import (
    ArtifactListOut,
    CreateExperimentIn,
    CreateExperimentOut,
    CreateRunIn,
    DeleteTagIn,
    Empty,
    ExperimentAnswer,
    LogBatchIn,
    LogMetricIn,
    LogParamIn,
    MetricHistoryOut,
    RunAnswer,
    RunRef,
    SearchExperimentsIn,
    SearchExperimentsOut,
    SearchLoggedModelsIn,
    SearchLoggedModelsOut,
    SearchRunsIn,
    SearchRunsOut,
    SetExperimentTagIn,
    SetTagIn,
    UpdateRunIn,
    UpdateRunOut,
)
from backend.models import Run

router = APIRouter(prefix="/mlflow/{project}", tags=["mlflow"], include_in_schema=False, responses={})

ProjectName = Annotated[
    str,
    Path(
        min_length=1,
        max_length=200,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
        description="the project's name",
    ),
]
RunIdQuery = Annotated[str | None, Query(max_length=64)]
V2 = "/api/2.0/mlflow"
ARTIFACTS = "/api/2.0/mlflow-artifacts/artifacts"


def _run(session: Session, principal: Principal, project: str, run_id: str, minimum: str) -> Run:
    return service.project_run(session, principal, project, run_id, minimum)


# -- experiments ----------------------------------------------------------------------------------------------


@router.post(
    f"{V2}/experiments/create",
    response_model=CreateExperimentOut,
    response_model_exclude_none=True,
    operation_id="mlflow-experiments_create",
)
def create_experiment(
    project: ProjectName, body: CreateExperimentIn, principal: PrincipalDep, session: SessionDep
) -> CreateExperimentOut:
    """A new external experiment (a member); ``RESOURCE_ALREADY_EXISTS`` when the project has one of that
    name. ``artifact_location`` is ignored: artifacts are kept in the platform's store."""
    project_ = service.project(session, principal, project, "member")
    return CreateExperimentOut(
        experiment_id=str(service.create_experiment(session, principal, project_, body).id)
    )


@router.get(
    f"{V2}/experiments/get",
    response_model=ExperimentAnswer,
    response_model_exclude_none=True,
    operation_id="mlflow-experiments_get",
)
def get_experiment(
    project: ProjectName,
    principal: PrincipalDep,
    session: SessionDep,
    experiment_id: Annotated[str, Query(max_length=20)],
) -> ExperimentAnswer:
    project_ = service.project(session, principal, project, "viewer")
    experiment = service.experiment_of(session, project_, experiment_id)
    return ExperimentAnswer(experiment=service.present_experiments(session, [experiment])[0])


@router.get(
    f"{V2}/experiments/get-by-name",
    response_model=ExperimentAnswer,
    response_model_exclude_none=True,
    operation_id="mlflow-experiments_get_by_name",
)
def get_experiment_by_name(
    project: ProjectName,
    principal: PrincipalDep,
    session: SessionDep,
    experiment_name: Annotated[str, Query(min_length=1, max_length=300)],
) -> ExperimentAnswer:
    """The project's external experiment of that name (MLflow's names are the SDK's ``experiment=``)."""
    project_ = service.project(session, principal, project, "viewer")
    experiment = service.experiment_named(session, project_, experiment_name)
    return ExperimentAnswer(experiment=service.present_experiments(session, [experiment])[0])


def _search_experiments(
    session: Session, principal: Principal, project: str, body: SearchExperimentsIn
) -> SearchExperimentsOut:
    project_ = service.project(session, principal, project, "viewer")
    found, token = service.search_experiments(session, project_, body)
    return SearchExperimentsOut(
        experiments=service.present_experiments(session, found), next_page_token=token
    )


@router.post(
    f"{V2}/experiments/search",
    response_model=SearchExperimentsOut,
    response_model_exclude_none=True,
    operation_id="mlflow-experiments_search",
)
def search_experiments(
    project: ProjectName, body: SearchExperimentsIn, principal: PrincipalDep, session: SessionDep
) -> SearchExperimentsOut:
    """The project's experiments (any kind), filtered by name, id, creation time and tags, a page at a time."""
    return _search_experiments(session, principal, project, body)


@router.get(
    f"{V2}/experiments/search",
    response_model=SearchExperimentsOut,
    response_model_exclude_none=True,
    operation_id="mlflow-experiments_search_get",
)
def search_experiments_get(
    project: ProjectName,
    principal: PrincipalDep,
    session: SessionDep,
    max_results: Annotated[int | None, Query(ge=1, le=50_000)] = None,
    page_token: Annotated[str | None, Query(max_length=500)] = None,
    filter_: Annotated[str | None, Query(alias="filter", max_length=4000)] = None,
    order_by: Annotated[list[str] | None, Query()] = None,
    view_type: Annotated[str | None, Query(max_length=20)] = None,
) -> SearchExperimentsOut:
    try:
        body = SearchExperimentsIn(
            max_results=max_results,
            page_token=page_token,
            filter=filter_,
            order_by=order_by or [],
            view_type=view_type,
        )
    except ValidationError as exc:
        errors = pydantic_errors(exc, ["query"])
        raise Invalid(errors[0]["msg"], errors) from None
    return _search_experiments(session, principal, project, body)


@router.post(
    f"{V2}/experiments/set-experiment-tag",
    response_model=Empty,
    operation_id="mlflow-experiments_set_tag",
)
def set_experiment_tag(
    project: ProjectName, body: SetExperimentTagIn, principal: PrincipalDep, session: SessionDep
) -> Empty:
    """``mlflow.note.content`` sets the description; MLflow's other own tags are not kept; any other tag is
    the experiment's label ``key=value``."""
    project_ = service.project(session, principal, project, "member")
    experiment = service.experiment_of(session, project_, body.experiment_id)
    service.set_experiment_tags(session, experiment, [body], "key")
    return Empty()


# -- runs -----------------------------------------------------------------------------------------------------


@router.post(
    f"{V2}/runs/create",
    response_model=RunAnswer,
    response_model_exclude_none=True,
    operation_id="mlflow-runs_create",
)
def create_run(
    project: ProjectName, body: CreateRunIn, principal: PrincipalDep, session: SessionDep
) -> RunAnswer:
    """A new external run, running (a member), in the experiment (``0`` or none: the project's Default)."""
    project_ = service.project(session, principal, project, "member")
    run = service.create_run(session, principal, project_, body)
    return RunAnswer(run=service.present_runs(session, [run])[0])


@router.post(
    f"{V2}/runs/update",
    response_model=UpdateRunOut,
    response_model_exclude_none=True,
    operation_id="mlflow-runs_update",
)
def update_run(
    project: ProjectName, body: UpdateRunIn, principal: PrincipalDep, session: SessionDep
) -> UpdateRunOut:
    """Rename and start or end a run (``set_terminated``: FINISHED, FAILED, KILLED; RUNNING reopens an ended
    one as its next attempt)."""
    project_ = service.project(session, principal, project, "member")
    run = service.update_run(
        session, principal, project_, service.run_of(session, project_, body.run()), body
    )
    return UpdateRunOut(run_info=service.present_runs(session, [run])[0].info)


@router.get(
    f"{V2}/runs/get",
    response_model=RunAnswer,
    response_model_exclude_none=True,
    operation_id="mlflow-runs_get",
)
def get_run(
    project: ProjectName,
    principal: PrincipalDep,
    session: SessionDep,
    run_id: RunIdQuery = None,
    run_uuid: RunIdQuery = None,
) -> RunAnswer:
    """Any run of the project (a worker's too): its info, params, tags and each metric's latest point."""
    run = _run(session, principal, project, RunRef(run_id=run_id, run_uuid=run_uuid).run(), "viewer")
    return RunAnswer(run=service.present_runs(session, [run])[0])


@router.post(f"{V2}/runs/log-metric", response_model=Empty, operation_id="mlflow-runs_log_metric")
def log_metric(
    project: ProjectName,
    body: LogMetricIn,
    principal: PrincipalDep,
    session: SessionDep,
    settings: SettingsDep,
) -> Empty:
    run = _run(session, principal, project, body.run(), "member")
    service.alive(session, run)
    service.log_metrics(session, run, [body], settings.max_metric_batch)
    return Empty()


@router.post(f"{V2}/runs/log-parameter", response_model=Empty, operation_id="mlflow-runs_log_parameter")
def log_parameter(
    project: ProjectName, body: LogParamIn, principal: PrincipalDep, session: SessionDep
) -> Empty:
    run = _run(session, principal, project, body.run(), "member")
    service.alive(session, run)
    service.log_params(session, run, [body])
    return Empty()


@router.post(f"{V2}/runs/set-tag", response_model=Empty, operation_id="mlflow-runs_set_tag")
def set_tag(project: ProjectName, body: SetTagIn, principal: PrincipalDep, session: SessionDep) -> Empty:
    run = _run(session, principal, project, body.run(), "member")
    service.alive(session, run)
    service.set_tags(session, principal, run, [body], "key")
    return Empty()


@router.post(f"{V2}/runs/delete-tag", response_model=Empty, operation_id="mlflow-runs_delete_tag")
def delete_tag(
    project: ProjectName, body: DeleteTagIn, principal: PrincipalDep, session: SessionDep
) -> Empty:
    run = _run(session, principal, project, body.run(), "member")
    service.alive(session, run)
    service.delete_tag(session, principal, run, body.key)
    return Empty()


@router.post(f"{V2}/runs/log-batch", response_model=Empty, operation_id="mlflow-runs_log_batch")
def log_batch(
    project: ProjectName,
    body: LogBatchIn,
    principal: PrincipalDep,
    session: SessionDep,
    settings: SettingsDep,
) -> Empty:
    """Params, then metrics, then tags, in one transaction (all of the batch or none of it)."""
    run = _run(session, principal, project, body.run(), "member")
    service.alive(session, run)
    service.log_params(session, run, body.params)
    service.log_metrics(session, run, body.metrics, settings.max_metric_batch)
    service.set_tags(session, principal, run, body.tags, "tags")
    return Empty()


@router.post(
    f"{V2}/runs/search",
    response_model=SearchRunsOut,
    response_model_exclude_none=True,
    operation_id="mlflow-runs_search",
)
def search_runs(
    project: ProjectName, body: SearchRunsIn, principal: PrincipalDep, session: SessionDep
) -> SearchRunsOut:
    """The project's runs (of ``experiment_ids``, or all), filtered and ordered in MLflow's search language
    (backend/mlflowcompat/filters.py), at most 1,000 a page."""
    project_ = service.project(session, principal, project, "viewer")
    found, token = service.search_runs(session, project_, body)
    return SearchRunsOut(runs=service.present_runs(session, found), next_page_token=token)


@router.get(
    f"{V2}/metrics/get-history",
    response_model=MetricHistoryOut,
    response_model_exclude_none=True,
    operation_id="mlflow-metrics_get_history",
)
def get_metric_history(
    project: ProjectName,
    principal: PrincipalDep,
    session: SessionDep,
    metric_key: Annotated[str, Query(min_length=1, max_length=250)],
    run_id: RunIdQuery = None,
    run_uuid: RunIdQuery = None,
    max_results: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
    page_token: Annotated[str | None, Query(max_length=500)] = None,
) -> MetricHistoryOut:
    """Every point of one series in step order (one per step), 25,000 a page."""
    run = _run(session, principal, project, RunRef(run_id=run_id, run_uuid=run_uuid).run(), "viewer")
    points, token = service.metric_history(session, run, metric_key, max_results, page_token)
    return MetricHistoryOut(metrics=points, next_page_token=token)


@router.post(
    f"{V2}/logged-models/search",
    response_model=SearchLoggedModelsOut,
    response_model_exclude_none=True,
    operation_id="mlflow-logged_models_search",
)
def search_logged_models(
    project: ProjectName, body: SearchLoggedModelsIn, principal: PrincipalDep, session: SessionDep
) -> SearchLoggedModelsOut:
    """None: MLflow's logged models are not kept here (a run's model is among its artifacts). MLflow's client
    asks while it lists or downloads a run's artifacts."""
    project_ = service.project(session, principal, project, "viewer")
    service.experiment_ids(session, project_, body.experiment_ids, "experiment_ids")
    return SearchLoggedModelsOut()


# -- artifacts (MLflow's artifact proxy: the run's outputs/ folder) --------------------------------------------


@router.get(
    ARTIFACTS,
    response_model=ArtifactListOut,
    response_model_exclude_none=True,
    operation_id="mlflow-artifacts_list",
)
def list_artifacts(
    project: ProjectName,
    principal: PrincipalDep,
    session: SessionDep,
    store: StoreDep,
    path: Annotated[str, Query(max_length=2000)] = "",
) -> ArtifactListOut:
    """The files and folders right under ``path`` (``<experiment>/<run>/artifacts[/...]``)."""
    project_ = service.project(session, principal, project, "viewer")
    run, below = service.artifacts_of(session, project_, path.strip("/"))
    release_session(session)
    return ArtifactListOut(files=service.list_artifacts(store, run, below))


@router.get(
    f"{ARTIFACTS}/{{path:path}}", response_class=StreamingResponse, operation_id="mlflow-artifacts_download"
)
def download_artifact(
    project: ProjectName, path: str, principal: PrincipalDep, session: SessionDep, store: StoreDep
) -> StreamingResponse:
    project_ = service.project(session, principal, project, "viewer")
    run, below = service.artifacts_of(session, project_, path)
    if below is None:
        raise NotFound("name a file under the run's artifacts")
    clean = service.stored_path(below)
    release_session(session)
    stored = artifacts.stat(store, run.id, clean)
    if stored is None:
        raise NotFound(f"run {run.id} has no artifact {below!r}")
    headers = {
        "Content-Length": str(stored.size),
        "Content-Encoding": "identity",
        "Cache-Control": "private, no-store",
    }
    media_type = mimetypes.guess_type(clean)[0] or "application/octet-stream"
    return StreamingResponse(store.chunks(run.id, clean), media_type=media_type, headers=headers)


def _writable(session: Session, principal: Principal, project: str, path: str) -> tuple[Run, str]:
    project_ = service.project(session, principal, project, "member")
    run, below = service.artifacts_of(session, project_, path)
    if below is None:
        raise NotFound("name a file under the run's artifacts")
    service.writable(run)
    service.alive(session, run)
    release_session(session)
    return run, service.stored_path(below)


@router.put(f"{ARTIFACTS}/{{path:path}}", response_model=Empty, operation_id="mlflow-artifacts_upload")
async def upload_artifact(
    project: ProjectName,
    path: str,
    principal: PrincipalDep,
    session: SessionDep,
    store: StoreDep,
    request: Request,
) -> Empty:
    """``log_artifact``: the body streamed to the store (at most 256 GiB, as the artifact route) and visible
    at once when whole, replacing a file of the same path; a member, for an external run."""
    run, clean = await run_in_threadpool(_writable, session, principal, project, path)
    with artifacts.store_errors(run.id, clean):
        staged = await run_in_threadpool(store.stage, run.id, clean)
    with artifacts.store_errors(run.id, clean):
        try:
            await copy_body(request, staged.write)
            await run_in_threadpool(staged.commit)
        finally:
            await run_in_threadpool(staged.discard)
    return Empty()
