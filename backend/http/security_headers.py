"""What every client sees of the HTTP surface (docs/operations.md, Security).

- ``SecurityHeaders`` (pure ASGI): every response carries ``X-Content-Type-Options: nosniff``,
  ``X-Frame-Options: DENY``, ``Referrer-Policy: no-referrer`` and a Content-Security-Policy: the
  dashboard's (``DASHBOARD_CSP``: scripts only from the server itself, no inline or eval'd script),
  ``API_CSP`` for the API (JSON is never a document to render) and ``DOCS_CSP`` for the interactive docs
  page (Swagger UI from this server's /assets/swagger/, started by an inline script; no CDN).
- ``OptionsResponder`` (pure ASGI): ``OPTIONS`` answers 204 with ``Allow`` (the methods of the routes
  matching the path) instead of a 405; 404 for an unknown API path. Cross-origin use is off unless
  ``REASONLAB_CORS_ORIGINS`` is set (Starlette's CORSMiddleware then answers those origins' preflights
  before this): a browser's preflight from anywhere else gets no ``Access-Control-Allow-Origin``.
- ``install_api_not_found``: a path under ``/api`` that no route serves is the API's JSON 404 (a 405
  with ``Allow`` where the path exists for other methods), never the dashboard's HTML.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import HTTPException
from starlette.datastructures import MutableHeaders
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match, Mount, Router
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.errors import NotFound

DASHBOARD_CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        # Mantine injects <style> elements and ECharts writes style attributes (tooltips): inline styles
        # only, never inline script
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",  # ECharts' image export, icons as data: URLs
        "font-src 'self' data:",
        "connect-src 'self'",  # the API and its event streams: same origin
        "worker-src 'self' blob:",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
API_CSP = "default-src 'none'; frame-ancestors 'none'"
DOCS_CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self' 'unsafe-inline'",  # FastAPI's page starts Swagger UI with an inline script
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "frame-ancestors 'none'",
    )
)
FIXED_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
METHOD_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
API_ROOT = "/api"
API_FALLBACK = "api_not_found"
DASHBOARD_ROUTE = "dashboard"


def is_api_path(path: str) -> bool:
    return path == API_ROOT or path.startswith(API_ROOT + "/")


def content_security_policy(path: str, docs_url: str | None) -> str:
    if docs_url is not None and path.rstrip("/") in (docs_url, f"{docs_url}/oauth2-redirect"):
        return DOCS_CSP
    return API_CSP if is_api_path(path) else DASHBOARD_CSP


class SecurityHeaders:
    def __init__(self, app: ASGIApp, *, docs_url: str | None = None) -> None:
        self.app = app
        self.docs_url = docs_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        csp = content_security_policy(scope["path"], self.docs_url)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in FIXED_HEADERS.items():
                    headers.setdefault(name, value)
                headers.setdefault("Content-Security-Policy", csp)
            await send(message)

        await self.app(scope, receive, send_with_headers)


def allowed_methods(routes: list[BaseRoute], scope: Scope) -> list[str]:
    """The methods the routes serve at the request's path (the fallbacks left out), in METHOD_ORDER."""
    api = is_api_path(scope["path"])
    methods: set[str] = set()
    for route in routes:
        name = getattr(route, "name", None)
        if name == API_FALLBACK or (api and name == DASHBOARD_ROUTE):
            continue
        if isinstance(route, Mount):  # the dashboard's static files
            if route.matches(scope)[0] is not Match.NONE:
                methods |= {"GET", "HEAD"}
            continue
        # asked method by method: an included router only tells which of its routes serve a method
        for method in METHOD_ORDER[:-1]:
            if route.matches({**scope, "method": method})[0] is Match.FULL:
                methods.add(method)
    if not methods:
        return []
    methods.add("OPTIONS")
    return [m for m in METHOD_ORDER if m in methods]


class OptionsResponder:
    """``OPTIONS`` -> 204 with the path's ``Allow``, or the API's 404 for a path no route serves."""

    def __init__(self, app: ASGIApp, *, router: Router) -> None:
        self.app = app
        self.router = router

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "OPTIONS":
            await self.app(scope, receive, send)
            return
        methods = allowed_methods(self.router.routes, scope)
        response: Response
        if methods:
            response = Response(status_code=204, headers={"Allow": ", ".join(methods)})
        else:
            body = {"detail": f"no route {scope['path']}", "code": "not_found", "errors": []}
            response = JSONResponse(body, status_code=404)
        await response(scope, receive, send)


def install_api_not_found(app: FastAPI) -> None:
    """After every API route: the rest of ``/api`` is a JSON 404 (405 where other methods exist)."""

    def api_not_found(request: Request) -> None:
        methods = allowed_methods(app.router.routes, request.scope)
        if methods:
            raise HTTPException(405, "Method Not Allowed", headers={"Allow": ", ".join(methods)})
        raise NotFound(f"no API route {request.method} {request.url.path}")

    for path in (API_ROOT, API_ROOT + "/{path:path}"):
        app.add_api_route(
            path,
            api_not_found,
            methods=[m for m in METHOD_ORDER if m != "OPTIONS"],
            include_in_schema=False,
            name=API_FALLBACK,
        )
