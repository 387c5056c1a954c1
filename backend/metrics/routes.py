from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from pydantic_core import to_json

from backend.http.deps import Id, PrincipalDep, SessionDep, SettingsDep
from backend.metrics import reads, service
from backend.metrics.schemas import Accepted, MetricBatch, MetricsOut
from backend.runs import service as runs

router = APIRouter(prefix="/runs", tags=["metrics"])


@router.post(
    "/{run_id}/metrics",
    response_model=Accepted,
    operation_id="metrics-post",
    responses={413: {"description": "more than 10,000 points"}},
)
def post_metrics(
    run_id: Id,
    body: MetricBatch,
    principal: PrincipalDep,
    session: SessionDep,
    settings: SettingsDep,
) -> Accepted:
    # the body's size (64 MiB) and the caller's credential were checked before it was read (backend/http/limits.py)
    run = runs.get_for_worker(session, principal, run_id)
    runs.check_writer(run, body.attempt)
    return Accepted(accepted=service.ingest(session, run, body, settings.max_metric_batch))


@router.get("/{run_id}/metrics", response_model=MetricsOut, operation_id="metrics-get")
def get_metrics(
    run_id: Id,
    principal: PrincipalDep,
    session: SessionDep,
    keys: Annotated[str, Query(description="comma-separated keys; empty = all")] = "",
    max_points: Annotated[int, Query(ge=1, le=10_000)] = 1000,
    step_min: Annotated[int | None, Query(ge=0)] = None,
    step_max: Annotated[int | None, Query(ge=0)] = None,
    with_time: Annotated[
        bool, Query(description="each bucket's time (its last point's): charts over wall-clock time")
    ] = False,
) -> Response:
    run = runs.get_visible(session, principal, run_id)
    key_list = [k for k in (s.strip() for s in keys.split(",")) if k]
    series = service.query(session, run, key_list, max_points, step_min, step_max, with_time)
    # MetricsOut's JSON written straight from the rows (plain dicts: no pydantic object per bucket, no
    # dump and validation again by FastAPI); the declared response_model documents it
    return Response(to_json({"run_id": run.id, "series": series}), media_type="application/json")


@router.get("/{run_id}/metric-keys", response_model=list[str], operation_id="metrics-keys")
def metric_keys(run_id: Id, principal: PrincipalDep, session: SessionDep) -> list[str]:
    return reads.keys(session, runs.get_visible(session, principal, run_id).id)
