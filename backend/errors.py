"""The API's error hierarchy, mapped to HTTP in one handler (see docs/api.md, Errors)."""

from __future__ import annotations

import logging
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger("reasonlab.api")


class ErrorItem(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ErrorBody(BaseModel):
    detail: str
    code: str
    errors: list[ErrorItem] = []


class ApiError(Exception):
    status_code = 500
    code = "error"

    def __init__(self, detail: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = errors or []


class Unauthorized(ApiError):
    status_code = 401
    code = "unauthorized"


class Forbidden(ApiError):
    status_code = 403
    code = "forbidden"


class NotFound(ApiError):
    status_code = 404
    code = "not_found"


class Conflict(ApiError):
    status_code = 409
    code = "conflict"


def check_room(
    held: int, cap: int, *, owner: str, per: str, things: str, loc: list[str | int], kind: str, then: str
) -> None:
    """409 ``<kind>_full`` when ``owner`` (e.g. "run 7") holds more than ``cap`` ``things`` counting the one
    just flushed; the request's session then rolls it back. Callers count after the insert, under the
    owner's row lock (``db.lock_row``; SQLite writes one at a time anyway), so two requests at once cannot
    both take the last place. ``per``: the owner's sort ("a run"); ``then``: what the author may do now."""
    if held > cap:
        raise Conflict(
            f"{owner} holds {held - 1} {things}, the most {per} may hold is {cap}: {then}",
            [{"loc": loc, "msg": f"at most {cap} {things} {per}: {then}", "type": f"{kind}_full"}],
        )


class ClientGone(ApiError):
    """The client closed the connection before its request's body was complete (nobody reads the answer)."""

    status_code = 400
    code = "client_disconnected"


class TooLarge(ApiError):
    status_code = 413
    code = "too_large"


class Invalid(ApiError):
    status_code = 422
    code = "invalid"


class UnsupportedMediaType(ApiError):
    status_code = 415
    code = "unsupported_media_type"


class TooManyRequests(ApiError):
    status_code = 429
    code = "too_many_requests"

    def __init__(self, detail: str, retry_after: float) -> None:
        super().__init__(detail)
        self.retry_after = max(1, math.ceil(retry_after))


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "no or bad credentials"},
    403: {"model": ErrorBody, "description": "role does not allow this"},
    404: {"model": ErrorBody, "description": "not found or not visible"},
    409: {"model": ErrorBody, "description": "state does not allow this"},
    422: {"model": ErrorBody, "description": "validation error, with the field path of every error"},
}


# the code of an HTTP error Starlette or FastAPI raise themselves (an unknown path, a method the path lacks,
# a body that is not JSON): the same body as every other error
HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid",
    429: "too_many_requests",
}


def _clean_loc(loc: Any) -> list[str | int]:
    return [p if isinstance(p, int) else str(p) for p in loc]


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool | type(None)) else str(value)


def install_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        body = {"detail": exc.detail, "code": exc.code, "errors": exc.errors}
        headers = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else None
        if isinstance(exc, TooManyRequests):
            headers = {"Retry-After": str(exc.retry_after)}
        return JSONResponse(body, status_code=exc.status_code, headers=headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code in (204, 304) or exc.status_code < 200:
            return Response(status_code=exc.status_code, headers=exc.headers)
        body = {"detail": str(exc.detail), "code": HTTP_CODES.get(exc.status_code, "error"), "errors": []}
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(DBAPIError)
    async def _database(request: Request, exc: DBAPIError) -> JSONResponse:
        # What validation cannot see (a NUL byte Postgres refuses, a race on a unique key, a lost database
        # connection) still answers with a clear error, never a 500.
        if isinstance(exc, OperationalError):
            # the client only learns "try again": the API log says why (a lost connection, a deadlock, a
            # serialization failure, a timeout), with the driver's error class and SQLSTATE
            log.warning("503 for %s %s: %s", request.method, request.url.path, db_reason(exc))
        if isinstance(exc, IntegrityError):
            status, code, detail = 409, "conflict", "the change conflicts with stored data (already exists?)"
        elif isinstance(exc, DataError):
            status, code, detail = (
                422,
                "invalid",
                "a value cannot be stored (e.g. a NUL character or out of range)",
            )
        elif _timed_out(exc):
            status, code = 503, "unavailable"
            detail = (
                "the request's database work ran past the statement timeout (REASONLAB_STATEMENT_TIMEOUT_MS): "
                "too costly for the database now; narrow the query (fewer terms, a smaller page) or try again"
            )
        elif isinstance(exc, OperationalError):
            status, code, detail = 503, "unavailable", "the database is unavailable; try again"
        else:
            raise exc
        return JSONResponse({"detail": detail, "code": code, "errors": []}, status_code=status)

    @app.exception_handler(RequestValidationError)
    async def _validation(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {
                "loc": _clean_loc(e.get("loc", ())),
                "msg": str(e.get("msg", "")),
                "type": str(e.get("type", "")),
            }
            for e in exc.errors()
        ]
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        where = ".".join(str(p) for p in first["loc"])
        detail = f"{where}: {first['msg']}" if where else str(first["msg"])
        return JSONResponse({"detail": detail, "code": "invalid", "errors": errors}, status_code=422)


STATEMENT_TIMEOUT = "57014"  # Postgres's SQLSTATE for a statement its statement_timeout cancelled


def _timed_out(exc: DBAPIError) -> bool:
    return getattr(exc.orig, "sqlstate", None) == STATEMENT_TIMEOUT


def db_reason(exc: DBAPIError) -> str:
    """The database's own words for a failed statement: driver error class, SQLSTATE, message (one line)."""
    orig = exc.orig if exc.orig is not None else exc
    sqlstate = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    message = " ".join(str(orig).split())[:2000]
    return f"{type(orig).__name__}{f' [{sqlstate}]' if sqlstate else ''}: {message}"


def pydantic_errors(exc: Any, prefix: list[str | int]) -> list[dict[str, Any]]:
    """A pydantic ValidationError's errors as API error items under ``prefix``."""
    return [
        {"loc": prefix + _clean_loc(e["loc"]), "msg": e["msg"], "type": e["type"]}
        for e in exc.errors(include_url=False)
    ]


__all__ = [
    "ERROR_RESPONSES",
    "ApiError",
    "Conflict",
    "ErrorBody",
    "Forbidden",
    "Invalid",
    "NotFound",
    "TooLarge",
    "TooManyRequests",
    "Unauthorized",
    "_jsonable",
    "db_reason",
    "install_handlers",
    "pydantic_errors",
]
