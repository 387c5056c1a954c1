"""ReasonLab's Python SDK: a typed client of the REST API (docs/api.md, docs/sdk.md).

    from reasonlab_sdk import ReasonLabClient, view_runs_args

    with ReasonLabClient("http://127.0.0.1:8000", token) as client:
        run = client.get_run(1)
        view = client.get_view_by_id(view_id)  # a saved view, and the runs it shows:
        project = next(p["name"] for p in client.list_projects() if p["id"] == view["project_id"])
        page = client.list_runs(project=project, **view_runs_args(view))

Track any training script with ``reasonlab_sdk.init(...)`` and ``run.log({...})`` (``tracking.py``,
docs/tracking.md).

Install it alone with ``pip install ./sdk`` (httpx is its only dependency). ``api_types`` holds the
API's schemas as TypedDicts, generated from the OpenAPI document by ``sdk/gen_types.py``.
"""

from __future__ import annotations

from reasonlab_sdk import api_types
from reasonlab_sdk.client import (
    API_PREFIX,
    ApiError,
    ApiUnavailable,
    Conflict,
    FinishStatus,
    Forbidden,
    Invalid,
    Json,
    NotFound,
    ReasonLabClient,
    SseEvent,
    TooLarge,
    Unauthorized,
    api_base_url,
    is_storable,
    parse_sse,
    storable_text,
)
from reasonlab_sdk.tracking import Run, init
from reasonlab_sdk.views import ViewRunsArgs, view_runs_args

__all__ = [
    "API_PREFIX",
    "ApiError",
    "ApiUnavailable",
    "Conflict",
    "FinishStatus",
    "Forbidden",
    "Invalid",
    "Json",
    "NotFound",
    "ReasonLabClient",
    "Run",
    "SseEvent",
    "TooLarge",
    "Unauthorized",
    "ViewRunsArgs",
    "api_base_url",
    "api_types",
    "init",
    "is_storable",
    "parse_sse",
    "storable_text",
    "view_runs_args",
]
