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

3. Time: a body must keep up a minimum rate, ``request_body_min_rate`` bytes a second (32 KiB), after a
   grace of ``request_body_timeout`` seconds (10) at its start, averaged over ``request_body_rate_window``
   seconds (10): each byte received earns ``1 / min_rate`` seconds, waiting spends them, and the credit
   never grows past the window, so a client that sent fast and then stops is cut a window later. Time
   counts only while the application waits for the body (an upload the store is slow to take is not the
   client's fault). A body that falls behind is a 408. Bodies of every route class but the streamed
   uploads are read here, whole, *before* the request takes one of the admission slots
   (backend/http/admission.py) and are replayed to the route from memory: slow clients each wait in their
   own read and take no slot from anyone. A streamed upload (an artifact, up to 256 GiB, or a dataset,
   never held whole) is read by its route under the same rate, and the route gives its slot back while
   it copies (backend/http/transfers.py). Uvicorn has no deadline for a request's *headers*: in a
   deployment a reverse proxy in front of the API bounds them (docker/nginx/reasonlab.conf,
   docs/operations.md, "Reverse proxy and slow clients").
4. Budgets across requests: the request's credential is named here (``PRINCIPAL`` in the
   scope: ``identify``, handed in by the app factory like ``authenticate``, without the database), for
   the admission slots' shares and for two budgets of this process:
   - buffered bytes: the bodies read ahead are held in memory until their answer; at most
     ``max_buffered_bytes`` (256 MiB) of them at once, and ``max_buffered_bytes_per_principal`` (64 MiB)
     of one credential's. A body's ``Content-Length`` is counted before a byte of it is read (a chunked
     one as it arrives); one that would pass a cap is a 503 with ``Retry-After`` (a 413 if it is larger
     than a cap itself), never an out-of-memory process.
   - streamed uploads: at most ``max_uploads_in_flight`` (16) received at once, another is a 503 with
     ``Retry-After``; at most ``max_uploads_per_principal`` (4) of one credential's, another is a 429
     with ``Retry-After``. Both before a byte of the body is read.

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
from backend.http.admission import PRINCIPAL
from backend.settings import Settings

# The scope's key for what ``authenticate`` resolved the request's credential to, as ``(credential,
# result)``: the route's own dependency (backend/auth/dependencies.py) takes it instead of looking the
# same credential up a second time (two round trips of a small request's ~20).
RESOLVED = "reasonlab.resolved_credential"

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


ANONYMOUS = "anonymous"  # the name of every request without a credential that names someone
BUFFER_RETRY_AFTER = 2  # seconds: buffered bodies are answered within the deadline of their own route
UPLOADS_RETRY_AFTER = 10  # seconds: an upload ends when its body is in


def _error(
    status: int,
    code: str,
    detail: str,
    *,
    close: bool,
    www_authenticate: bool = False,
    retry_after: int | None = None,
) -> JSONResponse:
    headers = {"Connection": "close"} if close else {}
    if www_authenticate:
        headers["WWW-Authenticate"] = "Bearer"
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    return JSONResponse({"detail": detail, "code": code, "errors": []}, status_code=status, headers=headers)


def _too_large(limit: int) -> JSONResponse:
    return _error(413, "too_large", f"request body over {_size(limit)}", close=True)


def _too_slow(budget: _Budget) -> JSONResponse:
    detail = (
        f"the request body arrived slower than {_size(budget.min_rate)} a second (after the first "
        f"{budget.grace:g} s, averaged over {budget.window:g} s)"
    )
    return _error(408, "timeout", detail, close=True)


def _over_buffer(limit: int, whose: str) -> JSONResponse:
    detail = f"the API holds {_size(limit)} of request bodies {whose} at most, and is full: try again"
    return _error(503, "busy", detail, close=True, retry_after=BUFFER_RETRY_AFTER)


class _Refused(Exception):
    """Raised out of ``receive`` when the streamed body passes the limit or its deadline: the application
    stops reading, and ``response`` is the answer."""

    def __init__(self, response: JSONResponse) -> None:
        super().__init__(response.status_code)
        self.response = response


class _BodyTimeout(Exception):
    pass


class _Budget:
    """A body's minimum rate: ``grace`` seconds of credit at the start, ``1 / min_rate`` seconds more per
    byte received, the credit never raised past ``window`` seconds by the bytes (a leaky bucket: the rate
    is averaged over the window), spent only while the application waits in ``receive`` (an upload the
    store is slow to take is not the client's fault). Out of credit while waiting: ``_BodyTimeout``."""

    def __init__(self, grace: float, min_rate: int, window: float) -> None:
        self.grace, self.min_rate, self.window = grace, min_rate, window
        self.left = grace

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
            earned = self.left + len(message.get("body", b"")) / self.min_rate
            self.left = max(self.left, min(earned, self.window))
        return message


class Budgets:
    """This process's budgets across requests, by credential: bytes of buffered bodies and streamed
    uploads at once (counters on the serving loop, no locks: every change happens between two awaits)."""

    def __init__(self, settings: Settings) -> None:
        self.max_buffered = settings.max_buffered_bytes
        self.max_buffered_each = settings.max_buffered_bytes_per_principal
        self.max_uploads = settings.max_uploads_in_flight
        self.max_uploads_each = settings.max_uploads_per_principal
        self.buffered = 0
        self.buffered_by: dict[str, int] = {}
        self.uploads = 0
        self.uploads_by: dict[str, int] = {}

    def buffer_cap(self) -> int:
        """The largest body that could ever be buffered."""
        return min(self.max_buffered, self.max_buffered_each)

    def take_buffer(self, principal: str, n: int) -> JSONResponse | None:
        """Count ``n`` more bytes of ``principal``'s body, or the 503 saying which cap is full."""
        if self.buffered + n > self.max_buffered:
            return _over_buffer(self.max_buffered, "at once")
        mine = self.buffered_by.get(principal, 0)
        if mine + n > self.max_buffered_each:
            return _over_buffer(self.max_buffered_each, "of one credential at once")
        self.buffered += n
        self.buffered_by[principal] = mine + n
        return None

    def give_buffer(self, principal: str, n: int) -> None:
        if n == 0:
            return
        self.buffered -= n
        left = self.buffered_by[principal] - n
        if left:
            self.buffered_by[principal] = left
        else:
            del self.buffered_by[principal]

    def start_upload(self, principal: str) -> JSONResponse | None:
        """Count one more streamed upload of ``principal``, or the answer refusing it."""
        mine = self.uploads_by.get(principal, 0)
        if mine >= self.max_uploads_each:
            detail = (
                f"{mine} uploads of this credential are in progress, the most one credential sends at once "
                "(REASONLAB_MAX_UPLOADS_PER_PRINCIPAL): try again once one has ended"
            )
            return _error(429, "too_many_uploads", detail, close=True, retry_after=UPLOADS_RETRY_AFTER)
        if self.uploads >= self.max_uploads:
            detail = (
                f"the API is receiving {self.uploads} uploads, the most it takes at once "
                "(REASONLAB_MAX_UPLOADS_IN_FLIGHT): try again"
            )
            return _error(503, "busy", detail, close=True, retry_after=UPLOADS_RETRY_AFTER)
        self.uploads += 1
        self.uploads_by[principal] = mine + 1
        return None

    def end_upload(self, principal: str) -> None:
        self.uploads -= 1
        left = self.uploads_by[principal] - 1
        if left:
            self.uploads_by[principal] = left
        else:
            del self.uploads_by[principal]


class RequestLimits:
    """The pure ASGI middleware: body size by route class, a credential before any body is read, a
    minimum rate for the body, read ahead of the admission slots, and the process's budgets by credential.

    ``authenticate(credential)`` returns when the bearer credential resolves and raises ``Unauthorized``
    when it does not (a ``DBAPIError`` when the database cannot say); it runs in a worker thread. What it
    returns is kept in the scope (``RESOLVED``, with the credential) for the route's own dependency.
    ``identify(credential)`` names the credential for the budgets and shares (a user, an API token, a
    run, the worker token), or None where it names no one; it never touches the database."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        settings: Settings,
        authenticate: Callable[[str], object],
        identify: Callable[[str], str | None] | None = None,
    ) -> None:
        self.app = app
        self.settings = settings
        self.authenticate = authenticate
        self.identify = identify
        self.budgets = Budgets(settings)

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
        principal = self._principal(headers)
        scope[PRINCIPAL] = principal
        has_body = chunked or bool(declared)
        if has_body and _needs_credential(scope["method"], path):
            refusal = await self._refuse_credential(scope, headers)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        if not has_body:
            await self.app(scope, receive, send)
            return
        settings = self.settings
        budget = _Budget(
            settings.request_body_timeout, settings.request_body_min_rate, settings.request_body_rate_window
        )
        if kind.streamed:
            refused = self.budgets.start_upload(principal)
            if refused is not None:
                await refused(scope, receive, send)
                return
            try:
                await self._call_streamed(scope, receive, send, limit, budget)
            finally:
                self.budgets.end_upload(principal)
        else:
            await self._call_read_ahead(scope, receive, send, limit, budget, principal, declared)

    def _principal(self, headers: Headers) -> str:
        scheme, credential = get_authorization_scheme_param(headers.get("authorization"))
        if self.identify is None or scheme.lower() != "bearer" or not credential:
            return ANONYMOUS
        try:
            name = self.identify(credential)
        except Exception:  # a credential this cannot read names no one; the route refuses it
            name = None
        return name or ANONYMOUS

    async def _refuse_credential(self, scope: Scope, headers: Headers) -> JSONResponse | None:
        scheme, credential = get_authorization_scheme_param(headers.get("authorization"))
        if scheme.lower() != "bearer" or not credential:
            detail = "missing credentials: send 'Authorization: Bearer <token>'"
            return _error(401, "unauthorized", detail, close=True, www_authenticate=True)
        try:
            scope[RESOLVED] = (credential, await run_in_threadpool(self.authenticate, credential))
        except Unauthorized as exc:
            return _error(401, "unauthorized", exc.detail, close=True, www_authenticate=True)
        except DBAPIError:
            return _error(503, "unavailable", "the database is unavailable; try again", close=True)
        return None

    async def _call_read_ahead(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        limit: int,
        budget: _Budget,
        principal: str,
        declared: int | None,
    ) -> None:
        """Read the whole body here (outside the admission slots), within its size, its rate and the
        buffered-bytes budget, then hand the application the body from memory and, after it, the
        connection's own ``receive`` (a streaming answer listens there for the client's disconnect). The
        body's bytes stay counted until the application has answered."""
        budgets = self.budgets
        cap = budgets.buffer_cap()
        if declared is not None and declared > cap:
            await _too_large(cap)(scope, receive, send)
            return
        counted = 0
        try:
            if declared is not None:
                refused = budgets.take_buffer(principal, declared)
                if refused is not None:
                    await refused(scope, receive, send)
                    return
                counted = declared
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
                if received > counted:  # a chunked body (or one longer than it said): counted as it comes
                    if received > cap:
                        await _too_large(cap)(scope, receive, send)
                        return
                    refused = budgets.take_buffer(principal, received - counted)
                    if refused is not None:
                        await refused(scope, receive, send)
                        return
                    counted = received
                messages.append(message)
                if not message.get("more_body", False):
                    break

            async def replay() -> Message:
                return messages.popleft() if messages else await receive()

            await self.app(scope, replay, send)
        finally:
            budgets.give_buffer(principal, counted)

    async def _call_streamed(
        self, scope: Scope, receive: Receive, send: Send, limit: int, budget: _Budget
    ) -> None:
        """The application reads the body as it goes (an artifact or a dataset upload, streamed to the
        store); every read is counted against the limit and the minimum rate until the body's last
        message."""
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
