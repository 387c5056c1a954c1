"""Request bodies are bounded and authenticated before anything reads them (a pure ASGI middleware).

Without it, one anonymous ``POST`` of 300 MB was read and parsed in full (JSON, then pydantic) before
the route's dependency looked at its credential. ``RequestLimits`` runs before routing and parsing:

1. Size, by route class (``LIMITS``, docs/operations.md, Security): a ``Content-Length`` over the
   class's limit is a 413 at once, the body unread; without one (chunked transfer) the body is counted
   as the application reads it, and reading stops with a 413 as soon as the count passes the limit.
2. Credential: a request to ``/api/v1`` that carries a body (a ``Content-Length`` above 0, or chunked),
   except ``POST /api/v1/auth/login``, is a 401 unless its bearer credential resolves
   (``backend.deps.resolve_credential``: the worker token, an API token, a login JWT). That check only
   keeps anonymous bodies out; the route's own dependency still decides what the caller may do.

A refusal of an unread body answers ``Connection: close``: the server drops the connection rather than
reading the rest to reuse it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fastapi.security.utils import get_authorization_scheme_param
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.errors import Unauthorized
from backend.settings import Settings

KiB = 1024
MiB = 1024 * KiB

METRICS_LIMIT = 64 * MiB  # POST /runs/{id}/metrics: 10,000 points (the batch limit) with room to spare
# POST /runs/{id}/logs, /results, /finish: log batches, result records, tracebacks (an error of 10^6 characters)
WORKER_WRITE_LIMIT = 16 * MiB
# PUT /runs/{id}/artifacts/...: a checkpoint or a final model, streamed to the store, never held in memory
ARTIFACT_LIMIT = 256 * 1024 * MiB
LOGIN_LIMIT = 64 * KiB  # POST /auth/login: anonymous, a username and a password
DEFAULT_LIMIT = 4 * MiB  # every other API route: specs, sweeps, descriptions, comments
OUTSIDE_API_LIMIT = 64 * KiB  # the dashboard takes no bodies

API_PREFIX = "/api/v1"


@dataclass(frozen=True)
class RouteClass:
    name: str
    pattern: re.Pattern[str]
    limit: int


LIMITS: tuple[RouteClass, ...] = (
    RouteClass("metric ingest", re.compile(r"^/api/v1/runs/[^/]+/metrics/?$"), METRICS_LIMIT),
    RouteClass(
        "worker writes", re.compile(r"^/api/v1/runs/[^/]+/(?:logs|results|finish)/?$"), WORKER_WRITE_LIMIT
    ),
    RouteClass("artifact upload", re.compile(r"^/api/v1/runs/[^/]+/artifacts/."), ARTIFACT_LIMIT),
    RouteClass("login", re.compile(r"^/api/v1/auth/login/?$"), LOGIN_LIMIT),
    RouteClass("API", re.compile(r"^/api/v1(?:/|$)"), DEFAULT_LIMIT),
)

_DIGITS = re.compile(r"^[0-9]{1,19}$")


def body_limit(path: str) -> int:
    """The largest body (bytes) a request to ``path`` may carry."""
    for route_class in LIMITS:
        if route_class.pattern.match(path):
            return route_class.limit
    return OUTSIDE_API_LIMIT


def _size(n: int) -> str:
    return (
        f"{n // (1024 * MiB)} GiB"
        if n % (1024 * MiB) == 0
        else f"{n // MiB} MiB"
        if n % MiB == 0
        else f"{n // KiB} KiB"
    )


def _needs_credential(method: str, path: str) -> bool:
    if not (path == API_PREFIX or path.startswith(API_PREFIX + "/")):
        return False
    return not (method == "POST" and path.rstrip("/") == f"{API_PREFIX}/auth/login")


def _error(
    status: int, code: str, detail: str, *, close: bool, www_authenticate: bool = False
) -> JSONResponse:
    headers = {"Connection": "close"} if close else {}
    if www_authenticate:
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse({"detail": detail, "code": code, "errors": []}, status_code=status, headers=headers)


class _BodyTooLarge(Exception):
    """Raised out of ``receive`` when the streamed body passes the limit: the application stops reading."""


class RequestLimits:
    """The pure ASGI middleware: body size by route class, and a credential before any body is read."""

    def __init__(self, app: ASGIApp, *, settings: Settings, session_factory: sessionmaker[Session]) -> None:
        self.app = app
        self.settings = settings
        self.session_factory = session_factory

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        path: str = scope["path"]
        limit = body_limit(path)
        declared_text = headers.get("content-length")
        chunked = "transfer-encoding" in headers
        declared: int | None = None
        if declared_text is not None:
            if not _DIGITS.match(declared_text.strip()):
                await _error(400, "bad_request", "malformed Content-Length", close=True)(scope, receive, send)
                return
            declared = int(declared_text.strip())
            if declared > limit:
                response = _error(413, "too_large", f"request body over {_size(limit)}", close=True)
                await response(scope, receive, send)
                return
        if (chunked or bool(declared)) and _needs_credential(scope["method"], path):
            refusal = await self._refuse_credential(headers)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self._call_limited(scope, receive, send, limit)

    async def _refuse_credential(self, headers: Headers) -> JSONResponse | None:
        scheme, credential = get_authorization_scheme_param(headers.get("authorization"))
        if scheme.lower() != "bearer" or not credential:
            detail = "missing credentials: send 'Authorization: Bearer <token>'"
            return _error(401, "unauthorized", detail, close=True, www_authenticate=True)
        try:
            await run_in_threadpool(self._resolve, credential)
        except Unauthorized as exc:
            return _error(401, "unauthorized", exc.detail, close=True, www_authenticate=True)
        except DBAPIError:
            return _error(503, "unavailable", "the database is unavailable; try again", close=True)
        return None

    def _resolve(self, credential: str) -> None:
        from backend.deps import resolve_credential  # deps imports the settings and models: load it late

        session = self.session_factory()
        try:
            resolve_credential(session, self.settings, credential)
        finally:
            session.close()

    async def _call_limited(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        received = 0
        refused = False
        started = False

        async def limited_receive() -> Message:
            nonlocal received, refused
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    refused = True
                    raise _BodyTooLarge
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refused:  # whatever the application answers to its aborted read, the answer is the 413
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except Exception:
            if not refused:
                raise
        if refused and not started:
            response = _error(413, "too_large", f"request body over {_size(limit)}", close=True)
            await response(scope, receive, send)
