"""A route that streams its request body declares it binary in the OpenAPI document, so the typed clients
take a file as it is (the dashboard's generated client: a ``Blob``) and the committed document says so."""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import Any

from fastapi import APIRouter
from fastapi.routing import APIRoute

from tests.backend.conftest import Api

REPO = Path(__file__).resolve().parents[2]
BINARY_BODY = {
    "required": True,
    "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
}


def _operations(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {op["operationId"]: op for methods in document["paths"].values() for op in methods.values()}


def _streaming_operations() -> set[str]:
    """The operation ids of the backend's routes in the OpenAPI document whose endpoint reads
    ``request.stream()`` itself or through backend/http/transfers.py's ``copy_body`` (every router of every
    backend module the app has loaded; MLflow's REST API, not in the document, aside)."""
    routers = {
        id(value): value
        for name, module in list(sys.modules.items())
        if name.startswith("backend.")
        for value in vars(module).values()
        if isinstance(value, APIRouter)
    }
    routes = [r for router in routers.values() for r in router.routes if isinstance(r, APIRoute)]
    assert len(routes) > 40  # the walk sees the whole API
    return {
        r.operation_id
        for r in routes
        if r.operation_id is not None
        and r.include_in_schema
        and any(read in inspect.getsource(r.endpoint) for read in ("request.stream()", "copy_body(request"))
    }


def test_every_streamed_body_is_binary_in_the_document(api: Api) -> None:
    streamed = _streaming_operations()
    assert streamed == {"datasets-upload", "artifacts-upload"}
    operations = _operations(api.client.app.openapi())  # type: ignore[attr-defined]
    for op in streamed:
        assert operations[op].get("requestBody") == BINARY_BODY, op
    # and only theirs: every other body is JSON; the metric batch JSON or its compact body (columns of
    # numbers, backend/metrics/columns.py), whose JSON schema is the document's MetricBatch
    others = {op for op, o in operations.items() if "requestBody" in o and op not in streamed}
    assert "metrics-post" in others and all(
        set(operations[op]["requestBody"]["content"]) == {"application/json"}
        for op in others - {"metrics-post"}
    )
    batch = operations["metrics-post"]["requestBody"]["content"]
    assert set(batch) == {"application/json", "application/x-reasonlab-points"}
    assert batch["application/json"]["schema"] == {"$ref": "#/components/schemas/MetricBatch"}
    assert batch["application/x-reasonlab-points"]["schema"]["format"] == "binary"


def test_the_committed_document_types_the_uploads_the_same(api: Api) -> None:
    committed = _operations(json.loads((REPO / "frontend" / "openapi.json").read_text(encoding="utf-8")))
    for op in _streaming_operations():
        assert committed[op].get("requestBody") == BINARY_BODY, op
