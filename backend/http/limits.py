"""Request bodies are bounded and authenticated before anything reads them (a pure ASGI middleware).

Without it, one anonymous ``POST`` of 300 MB was read and parsed in full (JSON, then pydantic) before
the route's dependency looked at its credential. ``RequestLimits`` runs before routing and parsing:

1. Size, by route class (``LIMITS``, docs/operations.md, Security): a ``Content-Length`` over the
   class's limit is a 413 at once, the body unread; without one (chunked transfer) the body is counted
   as the application reads it, and reading stops with a 413 as soon as the count passes the limit.
2. Credential: a request to ``/api/v1`` that carries a body (a ``Content-Length`` above 0, or chunked),
   except ``POST /api/v1/auth/login``, is a 401 unless its bearer credential resolves
   (``authenticate``, which the app factory hands in: authorization's ``resolve_credential``, the worker
   token, an API token, a login JWT; the edge imports no domain). That check only keeps anonymous bodies
   out; the route's own dependency still decides what the caller may do.

3. Time: a body must arrive within ``request_body_timeout`` seconds (10 by default), plus one
   second per ``request_body_min_rate`` bytes received (64 KiB a second: what a 64 MiB metric batch or a
   checkpoint upload needs), counted while the application waits for it. A body that does not is a 408.
   Bodies of every route class but the artifact upload are read here, whole, *before* the request takes
   one of the admission slots (backend/http/admission.py) and is replayed to the route from memory: 25
   anonymous clients that start a login and send a byte now and then each wait in their own read, for
   at most ~11 s, and take no slot from anyone. An artifact upload (streamed to the store, up to 256 GiB,
   never held whole) is read by its route inside its slot under the same deadline; it needs a credential
   before a byte is read (2.). Uvicorn has no deadline for a request's *headers*: in a deployment a
   reverse proxy in front of the API bounds them (docker/nginx.conf, docs/operations.md, "Reverse proxy
   and slow clients").

A refusal of an unread or unfinished body answers ``Connection: close``: the server drops the connection
rather than reading the rest to reuse it.
"""

from __future__ import annotations

import asyncio
import collections
import re
from collections.abc import Callable
from dataclasses import dataclass

from fastapi.security.utils import get_authorization_scheme_param
from sqlalchemy.exc import DBAPIError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.errors import Unauthorized
from backend.settings import Settings

KiB = 1024
MiB = 1024 * KiB

METRICS_LIMIT = 64 * MiB  # POST /runs/{id}/metrics: 10,000 points (the batch limit) with room to spare
# POST /runs/{id}/logs, /results, /examples, /finish: log batches, result records, per-example rows (1,000
# a batch), tracebacks (an error of 10^6 characters)
WORKER_WRITE_LIMIT = 16 * MiB
# POST /exports/parquet: a chart's table (at most 1,000,000 cells, backend/exports/schemas.py) as JSON
TABLE_EXPORT_LIMIT = 16 * MiB
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
    streamed: bool = False  # the route streams its body on (never whole in memory): not read ahead


LIMITS: tuple[RouteClass, ...] = (
    RouteClass("metric ingest", re.compile(r"^/api/v1/runs/[^/]+/metrics/?$"), METRICS_LIMIT),
    RouteClass(
        "worker writes",
        re.compile(r"^/api/v1/runs/[^/]+/(?:logs|results|examples|finish)/?$"),
        WORKER_WRITE_LIMIT,
    ),
    RouteClass(
        "artifact upload", re.compile(r"^/api/v1/runs/[^/]+/artifacts/."), ARTIFACT_LIMIT, streamed=True
    ),
    # PUT /projects/{id}/datasets/{name}: streamed to the store; the route holds it to dataset_max_bytes
    RouteClass(
        "dataset upload", re.compile(r"^/api/v1/projects/[^/]+/datasets/."), ARTIFACT_LIMIT, streamed=True
    ),
    # PUT /mlflow/{project}/api/2.0/mlflow-artifacts/artifacts/...: MLflow's log_artifact, streamed to the
    # store like the artifact route's uploads (backend/mlflowcompat/)
    RouteClass(
        "MLflow artifact upload",
        re.compile(r"^/api/v1/mlflow/[^/]+/api/2\.0/mlflow-artifacts/artifacts/."),
        ARTIFACT_LIMIT,
        streamed=True,
    ),
    RouteClass("table export", re.compile(r"^/api/v1/exports/parquet/?$"), TABLE_EXPORT_LIMIT),
    RouteClass("login", re.compile(r"^/api/v1/auth/login/?$"), LOGIN_LIMIT),
    RouteClass("API", re.compile(r"^/api/v1(?:/|$)"), DEFAULT_LIMIT),
)

_DIGITS = re.compile(r"^[0-9]{1,19}$")


OUTSIDE_API = RouteClass("outside the API", re.compile(""), OUTSIDE_API_LIMIT)


def route_class(path: str) -> RouteClass:
    for candidate in LIMITS:
        if candidate.pattern.match(path):
            return candidate
    return OUTSIDE_API


def body_limit(path: str) -> int:
    """The largest body (bytes) a request to ``path`` may carry."""
    return route_class(path).limit


def _size(n: int) -> str:
    return (
        f"{n // (1024 * MiB)} GiB"
        if n % (1024 * MiB) == 0
        else f"{n // MiB} MiB"
        if n % MiB == 0
        else f"{n // KiB} KiB"
        if n % KiB == 0
        else f"{n} bytes"
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


def _too_large(limit: int) -> JSONResponse:
    return _error(413, "too_large", f"request body over {_size(limit)}", close=True)


def _too_slow(budget: _Budget) -> JSONResponse:
    detail = (
        f"the request body did not arrive in time ({budget.seconds:g} s, and 1 s more per "
        f"{_size(budget.min_rate)} received)"
    )
    return _error(408, "timeout", detail, close=True)


class _Refused(Exception):
    """Raised out of ``receive`` when the streamed body passes the limit or its deadline: the application
    stops reading, and ``response`` is the answer."""

    def __init__(self, response: JSONResponse) -> None:
        super().__init__(response.status_code)
        self.response = response


class _BodyTimeout(Exception):
    pass


class _Budget:
    """The time a body may take: ``seconds``, plus a second per ``min_rate`` bytes received, spent only
    while the application waits in ``receive`` (an upload the store is slow to take is not the
    client's fault)."""

    def __init__(self, seconds: float, min_rate: int) -> None:
        self.seconds, self.min_rate = seconds, min_rate
        self.left = seconds

    async def receive(self, receive: Receive) -> Message:
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            async with asyncio.timeout(max(self.left, 0.0)):
                message = await receive()
        except TimeoutError:
            raise _BodyTimeout from None
        self.left -= loop.time() - started
        if message["type"] == "http.request":
            self.left += len(message.get("body", b"")) / self.min_rate
        return message


class RequestLimits:
    """The pure ASGI middleware: body size by route class, a credential before any body is read, and a
    deadline for the body, read ahead of the admission slots.

    ``authenticate(credential)`` returns when the bearer credential resolves and raises ``Unauthorized``
    when it does not (a ``DBAPIError`` when the database cannot say); it runs in a worker thread."""

    def __init__(self, app: ASGIApp, *, settings: Settings, authenticate: Callable[[str], object]) -> None:
        self.app = app
        self.settings = settings
        self.authenticate = authenticate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        path: str = scope["path"]
        kind = route_class(path)
        limit = kind.limit
        declared_text = headers.get("content-length")
        chunked = "transfer-encoding" in headers
        declared: int | None = None
        if declared_text is not None:
            if not _DIGITS.match(declared_text.strip()):
                await _error(400, "bad_request", "malformed Content-Length", close=True)(scope, receive, send)
                return
            declared = int(declared_text.strip())
            if declared > limit:
                await _too_large(limit)(scope, receive, send)
                return
        has_body = chunked or bool(declared)
        if has_body and _needs_credential(scope["method"], path):
            refusal = await self._refuse_credential(headers)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        if not has_body:
            await self.app(scope, receive, send)
            return
        budget = _Budget(self.settings.request_body_timeout, self.settings.request_body_min_rate)
        if kind.streamed:
            await self._call_streamed(scope, receive, send, limit, budget)
        else:
            await self._call_read_ahead(scope, receive, send, limit, budget)

    async def _refuse_credential(self, headers: Headers) -> JSONResponse | None:
        scheme, credential = get_authorization_scheme_param(headers.get("authorization"))
        if scheme.lower() != "bearer" or not credential:
            detail = "missing credentials: send 'Authorization: Bearer <token>'"
            return _error(401, "unauthorized", detail, close=True, www_authenticate=True)
        try:
            await run_in_threadpool(self.authenticate, credential)
        except Unauthorized as exc:
            return _error(401, "unauthorized", exc.detail, close=True, www_authenticate=True)
        except DBAPIError:
            return _error(503, "unavailable", "the database is unavailable; try again", close=True)
        return None

    async def _call_read_ahead(
        self, scope: Scope, receive: Receive, send: Send, limit: int, budget: _Budget
    ) -> None:
        """Read the whole body here (outside the admission slots), within its size and its deadline,
        then hand the application the body from memory and, after it, the connection's own ``receive``
        (a streaming answer listens there for the client's disconnect)."""
        messages: collections.deque[Message] = collections.deque()
        received = 0
        while True:
            try:
                message = await budget.receive(receive)
            except _BodyTimeout:
                await _too_slow(budget)(scope, receive, send)
                return
            if message["type"] != "http.request":  # http.disconnect: the client left, no one to answer
                return
            received += len(message.get("body", b""))
            if received > limit:
                await _too_large(limit)(scope, receive, send)
                return
            messages.append(message)
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return messages.popleft() if messages else await receive()

        await self.app(scope, replay, send)

    async def _call_streamed(
        self, scope: Scope, receive: Receive, send: Send, limit: int, budget: _Budget
    ) -> None:
        """The application reads the body as it goes (an artifact upload, streamed to the store); every
        read is counted against the limit and the deadline until the body's last message."""
        received = 0
        refused: JSONResponse | None = None
        finished = False
        started = False

        async def limited_receive() -> Message:
            nonlocal received, refused, finished
            if finished:
                return await receive()
            try:
                message = await budget.receive(receive)
            except _BodyTimeout:
                refused = _too_slow(budget)
                raise _Refused(refused) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    refused = _too_large(limit)
                    raise _Refused(refused)
                finished = not message.get("more_body", False)
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refused is not None:  # whatever the application answers to its aborted read, ours goes
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except Exception:
            if refused is None:
                raise
        if refused is not None and not started:
            await refused(scope, receive, send)
