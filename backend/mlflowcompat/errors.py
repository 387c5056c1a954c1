"""MLflow's error shape on the MLflow-compatible routes: ``{"error_code": "RESOURCE_DOES_NOT_EXIST",
"message": "..."}``, which MLflow's client raises as an ``MlflowException`` of that code.

The routes raise the platform's errors like every other route, and the request edge refuses bodies in the
platform's shape (a missing credential, a body too large or too slow, a full admission queue); this pure
ASGI middleware, around the edge, rewrites every error answer under ``/api/v1/mlflow/`` into MLflow's shape,
so whatever refused the request, the client reads a code it knows. A validation error (422) becomes
MLflow's 400 ``INVALID_PARAMETER_VALUE`` naming the field; a path no route serves is ``ENDPOINT_NOT_FOUND``
(what MLflow's client checks for an endpoint a server lacks). Successful answers pass through untouched.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.http.limits import API_PREFIX
from backend.http.security_headers import API_FALLBACK

PREFIX = f"{API_PREFIX}/mlflow/"

# the platform's error code -> (MLflow's error code, the HTTP status to answer; None: keep it)
CODES: dict[str, tuple[str, int | None]] = {
    "unauthorized": ("UNAUTHENTICATED", None),
    "forbidden": ("PERMISSION_DENIED", None),
    "not_found": ("RESOURCE_DOES_NOT_EXIST", None),
    "conflict": ("RESOURCE_CONFLICT", None),
    "invalid": ("INVALID_PARAMETER_VALUE", 400),
    "bad_request": ("BAD_REQUEST", None),
    "too_large": ("INVALID_PARAMETER_VALUE", None),  # 413: not retried, as a 429 would be
    "timeout": ("DEADLINE_EXCEEDED", None),
    "too_many_requests": ("REQUEST_LIMIT_EXCEEDED", None),
    "unavailable": ("TEMPORARILY_UNAVAILABLE", None),
    "method_not_allowed": ("ENDPOINT_NOT_FOUND", None),
}
_LOCATIONS = ("body", "query", "path", "header")


def _field(errors: list[Any]) -> str | None:
    """The first error's field as MLflow's client names it: ``metrics[0].value`` (no ``body.`` before it)."""
    if not errors or not isinstance(errors[0], dict):
        return None
    loc = [p for p in errors[0].get("loc", []) if isinstance(p, str | int)]
    if loc and loc[0] in _LOCATIONS:
        loc = loc[1:]
    name = ""
    for part in loc:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name or None


def mlflow_body(status: int, body: dict[str, Any], unrouted: bool) -> tuple[int, dict[str, str]]:
    """The platform's error body (``detail``, ``code``, ``errors``) as MLflow's, and its status."""
    code = str(body.get("code", ""))
    detail = str(body.get("detail", "")) or f"HTTP {status}"
    if code.isupper():  # already one of MLflow's codes (backend.mlflowcompat.service.MlflowError)
        return status, {"error_code": code, "message": detail}
    if unrouted and status == 404:
        return 404, {"error_code": "ENDPOINT_NOT_FOUND", "message": detail}
    error_code, answer = CODES.get(code, ("INTERNAL_ERROR", None))
    if code == "invalid":
        errors = body.get("errors")
        field = _field(errors if isinstance(errors, list) else [])
        message = errors[0].get("msg") if field and isinstance(errors, list) else None
        detail = f"Invalid value for parameter '{field}': {message}" if field and message else detail
    return answer or status, {"error_code": error_code, "message": detail}


class MlflowErrors:
    """Rewrites the error answers (status >= 400, JSON) of requests under ``PREFIX`` into MLflow's shape."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        held: Message | None = None
        body = bytearray()

        async def rewrite(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start":
                headers = Headers(raw=message.get("headers", []))
                if message["status"] >= 400 and headers.get("content-type", "").startswith(
                    "application/json"
                ):
                    held = message  # answered once its body is whole
                    return
                await send(message)
                return
            if held is None or message["type"] != "http.response.body":
                await send(message)
                return
            body.extend(message.get("body", b""))
            if message.get("more_body", False):
                return
            await self._answer(scope, held, bytes(body), send)

        await self.app(scope, receive, rewrite)

    async def _answer(self, scope: Scope, start: Message, raw: bytes, send: Send) -> None:
        status = int(start["status"])
        kept = list(start.get("headers", []))
        try:
            gzipped = Headers(raw=kept).get("content-encoding") == "gzip"
            parsed = json.loads(gzip.decompress(raw) if gzipped else raw)
        except (OSError, ValueError):  # not the platform's error body: passed on as it is
            parsed = None
        if isinstance(parsed, dict) and "error_code" not in parsed:
            route = scope.get("route")
            unrouted = route is None or getattr(route, "name", None) == API_FALLBACK
            status, shaped = mlflow_body(status, parsed, unrouted)
            raw = json.dumps(shaped).encode()
            kept = [(k, v) for k, v in kept if k.lower() != b"content-encoding"]
        kept = [(k, v) for k, v in kept if k.lower() != b"content-length"]
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [*kept, (b"content-length", str(len(raw)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": raw})
