from __future__ import annotations

import json
from email.message import Message
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from pydantic_core import to_json

from backend.auth.dependencies import PrincipalDep
from backend.errors import Invalid, UnsupportedMediaType
from backend.http.deps import MAX_ID, Id, SessionDep, SettingsDep
from backend.metrics import columns, reads, service
from backend.metrics.schemas import Accepted, MetricBatch, MetricsOut
from backend.runs import service as runs

router = APIRouter(prefix="/runs", tags=["metrics"])
# ``GET /runs/metrics`` (many runs' series of one key): its own router, which backend/main.py includes
# before the runs' routes, where ``GET /runs/{run_id}`` would take the path (and answer 422 for "metrics")
batch_router = APIRouter(prefix="/runs", tags=["metrics"])

# the most runs one batch read names (a compare page's seed groups: 40 groups x 5 seeds)
BATCH_MAX_RUNS = 200


def _run_ids(ids: str) -> list[int]:
    """``ids``' run ids in order, each once, or a 422 naming ``ids``."""

    def invalid(msg: str) -> Invalid:
        return Invalid(msg, [{"loc": ["query", "ids"], "msg": msg, "type": "value_error"}])

    parts = [p.strip() for p in ids.split(",")]
    if len(parts) > BATCH_MAX_RUNS:
        raise invalid(f"at most {BATCH_MAX_RUNS} run ids a request; this one names {len(parts)}")
    out: list[int] = []
    for part in parts:
        if not part.isascii() or not part.isdigit() or not 1 <= int(part) <= MAX_ID:
            raise invalid(f"{part!r} is not a run id (comma-separated integers from 1 to {MAX_ID})")
        out.append(int(part))
    return list(dict.fromkeys(out))


@batch_router.get(
    "/metrics",
    response_model=list[MetricsOut],
    operation_id="metrics-batch",
    responses={
        404: {"description": "one of the runs does not exist or is in a project the caller cannot see"}
    },
)
def get_metrics_batch(
    principal: PrincipalDep,
    session: SessionDep,
    ids: Annotated[
        str,
        Query(
            min_length=1,
            max_length=4000,
            description=f"comma-separated run ids, at most {BATCH_MAX_RUNS}; a repeated id is answered once",
        ),
    ],
    key: Annotated[
        str, Query(min_length=1, max_length=250, pattern=r"^[^_\x00]", description="one metric key")
    ],
    max_points: Annotated[int, Query(ge=1, le=10_000)] = 1000,
) -> Response:
    """One key's downsampled series of many runs in one request: each run's item is exactly what
    ``GET /runs/{run_id}/metrics?keys=<key>&max_points=<max_points>`` answers for it, in the order of
    ``ids``. 404 (the whole request) when one of the runs does not exist or the caller cannot see it, as
    the per-run read answers."""
    visible = runs.get_visible_many(session, principal, _run_ids(ids))
    items = [
        {"run_id": r.id, "series": service.query(session, r, [key], max_points, None, None)} for r in visible
    ]
    return Response(to_json(items), media_type="application/json")


def _media_type(request: Request) -> str:
    """The body's media type, lower case, without parameters; JSON when the request names none (as
    FastAPI reads a body without a ``Content-Type``)."""
    raw = request.headers.get("content-type")
    if not raw:
        return "application/json"
    message = Message()
    message["content-type"] = raw
    return message.get_content_type()


def _is_json(media_type: str) -> bool:
    main, _, sub = media_type.partition("/")
    return main == "application" and (sub == "json" or sub.endswith("+json"))


async def metric_body(request: Request) -> MetricBatch | columns.Decoded:
    """The batch of ``POST /runs/{id}/metrics``: JSON (``MetricBatch``, as FastAPI would read and check it:
    the same 422s) or the compact body (``backend.metrics.columns``: checked, not yet sorted); 415 for
    any other media type. The body was read ahead and bounded by the request edge."""
    media_type = _media_type(request)
    raw = await request.body()
    if media_type == columns.CONTENT_TYPE:
        settings = request.app.state.settings
        return columns.decode(raw, settings.max_metric_batch)
    if not _is_json(media_type):
        raise UnsupportedMediaType(
            f"a metric batch is application/json or {columns.CONTENT_TYPE}, not {media_type!r}"
        )
    if not raw:
        raise RequestValidationError(
            [{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}]
        )
    try:
        parsed: Any = json.loads(raw)
    except ValueError as exc:
        pos = exc.pos if isinstance(exc, json.JSONDecodeError) else 0
        error = {"type": "json_invalid", "loc": ("body", pos), "msg": "JSON decode error", "input": {}}
        raise RequestValidationError([error]) from None
    try:
        return MetricBatch.model_validate(parsed)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
        ) from None


# The request body, documented here because the route reads it itself (``metric_body``): JSON or the
# compact body. ``MetricBatch`` and ``MetricPoint`` are added to the document's schemas (``document``).
_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/MetricBatch"}},
            columns.CONTENT_TYPE: {
                "schema": {
                    "type": "string",
                    "format": "binary",
                    "description": "the same batch as columns (backend/metrics/columns.py; the SDK's sender)",
                }
            },
        },
    }
}


def document(openapi: dict[str, Any]) -> None:
    """Add the JSON body's schemas to the OpenAPI document (FastAPI adds only what a route's parameters
    name, and ``post_metrics`` reads its body itself)."""
    schema = MetricBatch.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas = openapi.setdefault("components", {}).setdefault("schemas", {})
    for name, definition in [*schema.pop("$defs", {}).items(), ("MetricBatch", schema)]:
        for field in definition.get("properties", {}).values():
            # as FastAPI writes a body's schema: an optional field's null default is left out (the
            # generated clients make such a field optional)
            if "default" in field and field["default"] is None:
                del field["default"]
        schemas.setdefault(name, definition)


@router.post(
    "/{run_id}/metrics",
    response_model=Accepted,
    operation_id="metrics-post",
    responses={
        413: {"description": "more than 10,000 points"},
        415: {"description": f"a body neither application/json nor {columns.CONTENT_TYPE}"},
    },
    openapi_extra=_BODY,
)
def post_metrics(
    run_id: Id,
    principal: PrincipalDep,
    session: SessionDep,
    settings: SettingsDep,
    # after the credential's dependency: a caller who may not write is told so, whatever the body holds
    body: Annotated[MetricBatch | columns.Decoded, Depends(metric_body)],
) -> Accepted:
    # the body's size (64 MiB) and the caller's credential were checked before it was read (backend/http/limits.py)
    run = runs.get_for_worker(session, principal, run_id)
    runs.check_writer(run, body.attempt)
    if isinstance(body, columns.Decoded):
        return Accepted(accepted=service.ingest_compact(session, run, body))
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
