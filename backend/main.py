"""create_app(): the API service (routers under /api/v1, the dashboard at /)."""

from __future__ import annotations

import asyncio
import gc
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.middleware.gzip import GZipMiddleware
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.routing import BaseRoute

from backend import auth, experiments, health, metrics, projects, results, reviews, runs
from backend.artifacts.routes import router as artifacts_router
from backend.auth.dependencies import credential_check, credential_name
from backend.auth.routes import router as auth_router
from backend.auth.security import use_settings_cost
from backend.auth.throttle import LoginThrottle
from backend.claims.routes import router as claims_router
from backend.datasets.routes import router as datasets_router
from backend.db import get_engine, session_factory
from backend.errors import ERROR_RESPONSES, NotFound, install_handlers
from backend.examples.routes import router as examples_router
from backend.experiments.routes import router as experiments_router
from backend.exports.routes import router as exports_router
from backend.health.routes import VERSION
from backend.health.routes import router as health_router
from backend.http import logredact
from backend.http.admission import AdmissionLimit
from backend.http.input_checks import refuse_unstorable_text
from backend.http.limits import RequestLimits
from backend.http.security_headers import (
    DASHBOARD_ROUTE,
    OptionsResponder,
    SecurityHeaders,
    install_api_not_found,
    is_api_path,
)
from backend.kinds.routes import router as kinds_router
from backend.metrics import routes as metrics_routes
from backend.metrics.routes import batch_router as metrics_batch_router
from backend.metrics.routes import router as metrics_router
from backend.mirror.service import Mirror
from backend.mlflowcompat.errors import MlflowErrors
from backend.mlflowcompat.routes import router as mlflow_router
from backend.projects.routes import router as projects_router
from backend.reports.routes import router as reports_router
from backend.results.routes import router as results_router
from backend.reviews.routes import router as reviews_router
from backend.runs.dispatch import Dispatcher
from backend.runs.events import router as events_router
from backend.runs.routes import router as runs_router
from backend.secrets.routes import router as secrets_router
from backend.settings import Settings, get_settings
from backend.tracking.routes import router as tracking_router
from backend.views.routes import router as views_router

API_PREFIX = "/api/v1"
DOCS_URL = f"{API_PREFIX}/docs"
# Swagger UI's files, copied from the npm package swagger-ui-dist by the dashboard's build
# (frontend/vite.config.ts) and served from the server itself: the docs page works offline
SWAGGER_ASSETS = "/assets/swagger"
DEFAULT_STATIC = Path(__file__).parent / "static"
_ = (auth, experiments, health, metrics, projects, results, reviews, runs)


# young-generation threshold of the API process's collector (Python's default: 700 allocations)
GC_GEN0_THRESHOLD = 10_000
_gc_tuned = False


def tune_gc() -> None:
    """The API process's garbage collector, once per process (at the first app's start-up).

    A 10,000-point metric batch makes ~100,000 container objects (its JSON, the validated points, the rows
    for COPY, the roll-up blocks). With Python's defaults the collector ran ~105 young, ~10 middle and,
    every other batch, one full collection a batch, the middle and full ones walking the ~180,000 objects
    start-up made (FastAPI, SQLAlchemy and pydantic's schemas): ~130 ms of a ~400-550 ms batch in the API
    (in-process, load ~4; docs/benchmarks.md, "Metric ingest"). So: what start-up built is collected once
    and frozen (never walked again: it lives as long as the process), and young collections run every
    10,000 allocations instead of 700: ~15 ms a batch. Cycles are still collected."""
    global _gc_tuned
    if _gc_tuned:
        return
    _gc_tuned = True
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GC_GEN0_THRESHOLD, gen1, gen2)


_api_routes: list[BaseRoute] | None = None


def api_routes() -> list[BaseRoute]:
    """The API's routes under API_PREFIX, built once per process and shared by every app it creates.

    FastAPI builds each route when a router is included (its dependant, a pydantic TypeAdapter per parameter
    and response field): 82 routes took ~0.3-0.6 s of CPU per ``create_app``, paid again by every backend test
    (each makes an app for its own settings). The routes hold nothing of one app: settings, the session factory
    and the throttle are read from ``request.app.state``. They are built by a router of their own, so
    ``app.dependency_overrides`` does not reach them (nothing here uses it)."""
    global _api_routes
    if _api_routes is None:
        # every route refuses text no database stores (NUL, lone surrogates) with a 422 naming the field
        api = APIRouter(
            prefix=API_PREFIX, responses=ERROR_RESPONSES, dependencies=[Depends(refuse_unstorable_text)]
        )
        for router in (
            # first: MLflow's client sends many small requests (its async logging, ~20 points each), and
            # a request is matched against the routes in order; its paths (/api/v1/mlflow/...) are no other
            # router's, so its place changes no answer
            mlflow_router,  # MLflow's REST API for its own client (not in the OpenAPI document)
            health_router,
            auth_router,
            projects_router,
            kinds_router,
            experiments_router,
            metrics_batch_router,  # GET /runs/metrics, before GET /runs/{run_id}
            runs_router,
            events_router,
            metrics_router,
            results_router,
            examples_router,
            reviews_router,
            artifacts_router,
            secrets_router,
            datasets_router,
            exports_router,
            views_router,
            claims_router,
            reports_router,
            tracking_router,
        ):
            api.include_router(router)
        built = APIRouter()
        built.include_router(api)
        _api_routes = list(built.routes)
    return _api_routes


def create_app(settings: Settings | None = None, *, background: bool | None = None) -> FastAPI:
    settings = settings or get_settings()
    settings.require_api_secrets()
    use_settings_cost(settings)
    engine = get_engine(settings.database_url)
    factory = session_factory(engine)
    run_loops = settings.run_background_loops if background is None else background

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        tune_gc()
        dispatcher: Dispatcher | None = None
        mirror: Mirror | None = None
        if run_loops:
            dispatcher = Dispatcher(settings, factory)
            dispatcher.start()
            if settings.mlflow_mirror:  # MLflow, from the database (backend/mirror/)
                mirror = Mirror(settings, factory)
                mirror.start()
        app.state.dispatcher = dispatcher
        app.state.mirror = mirror
        try:
            yield
        finally:
            if mirror is not None:
                mirror.stop()
            if dispatcher is not None:
                dispatcher.stop()

    app = FastAPI(
        title="ReasonLab",
        version=VERSION,
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=None,  # our own page below: Swagger UI from this server, not from a CDN
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.settings = settings
    # the requests' sessions: each statement bounded (a costly query cannot hold a connection and a slot
    # for many seconds), on a pool of their own; the background loops above keep the unbounded factory and
    # its pool, where they hold a few connections at most
    requests = session_factory(engine, settings.statement_timeout_ms)
    app.state.session_factory = requests
    app.state.dispatcher = None
    app.state.login_throttle = LoginThrottle(
        free_failures=settings.login_failures_per_account,
        per_address=settings.login_failures_per_address,
        window=settings.login_window_seconds,
        backoff=settings.login_backoff_seconds,
        max_backoff=settings.login_backoff_max_seconds,
        account_free=settings.login_account_free_failures,
        account_max_backoff=settings.login_account_backoff_max_seconds,
    )
    app.state.login_slots = asyncio.Semaphore(settings.login_hash_slots)
    install_handlers(app)
    logredact.install(secrets=[settings.worker_token])
    # A metric query answers up to 1,000 buckets per key (~130 KB of JSON): gzip makes it ~36 KB on the
    # wire. Event streams are excluded by Starlette (text/event-stream is never buffered).
    # level 1, not Starlette's 9 (nor 5, as before): a 139 KB metric answer costs 1.5 ms of CPU on the
    # event loop instead of 4-8 ms at level 5 and ~11 ms at 9, for 9% more bytes (40 KB instead of 37 KB;
    # docs/benchmarks.md, "Metric query"); the 1 MB runs table of 10,000 runs likewise
    app.add_middleware(GZipMiddleware, minimum_size=1024, compresslevel=1)
    # at most max_requests_in_flight requests at once (below the connection pool; backend/http/admission.py)
    # and at most max_requests_in_flight_per_principal of them from one credential (its share), of which
    # reads (GET, HEAD) at most max_reads_in_flight (by default, no such bound)
    app.add_middleware(
        AdmissionLimit,
        limit=settings.max_requests_in_flight,
        per_principal=settings.max_requests_in_flight_per_principal,
        reads=settings.max_reads_in_flight,
    )
    # Outermost last: the security headers go on every answer (refusals and preflights included); CORS
    # (only where REASONLAB_CORS_ORIGINS is set) answers its origins' preflights; OPTIONS answers Allow;
    # bodies are bounded, need a credential before any route reads them, and are read at a minimum rate
    # before the request takes an admission slot, so slow clients cannot hold the slots; bytes buffered
    # and uploads at once are budgeted by credential (backend/http/limits.py).
    app.add_middleware(
        RequestLimits,
        settings=settings,
        authenticate=credential_check(settings, requests),
        identify=credential_name(settings),
    )
    # around the edge: every error answer under /api/v1/mlflow/ (the edge's refusals included) in MLflow's
    # shape, which MLflow's client raises as its own exceptions (backend/mlflowcompat/errors.py)
    app.add_middleware(MlflowErrors)
    app.add_middleware(OptionsResponder, router=app.router)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
            allow_credentials=False,  # bearer tokens, never cookies
            max_age=600,
        )
    app.add_middleware(SecurityHeaders, docs_url=DOCS_URL)

    app.router.routes.extend(api_routes())
    _install_docs(app)
    install_api_not_found(app)  # the rest of /api: JSON 404s, never the dashboard
    _mount_dashboard(app, settings.static_dir or DEFAULT_STATIC)
    _document_event_streams(app)
    return app


def _document_event_streams(app: FastAPI) -> None:
    """FastAPI files a response model under application/json; an event stream's belongs under
    text/event-stream (GET /runs/{id}/events), so the generated clients type the events. And the metric
    batch's schemas, whose route reads its body itself (backend/metrics/routes.py)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = build()
            metrics_routes.document(document)  # POST /runs/{id}/metrics reads its body itself
            for path in document["paths"].values():
                for operation in path.values():
                    for response in operation.get("responses", {}).values():
                        content = response.get("content", {})
                        if "text/event-stream" in content and "application/json" in content:
                            content["text/event-stream"] = content.pop("application/json")
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _install_docs(app: FastAPI) -> None:
    """The interactive API docs at DOCS_URL, loading Swagger UI's script and styles from SWAGGER_ASSETS
    (the built dashboard's assets), so the page needs no internet access and its CSP names no CDN."""

    @app.get(DOCS_URL, include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or f"{API_PREFIX}/openapi.json",
            title=f"{app.title} API",
            swagger_js_url=f"{SWAGGER_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{SWAGGER_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{SWAGGER_ASSETS}/favicon-32x32.png",
        )


# A built asset's name carries a hash of its content (Vite: name-[hash].ext, 8 characters), so it never
# changes under its name: browsers keep it for a year without asking again, and a page's chunks come from
# the cache (no round trip each, under load ~40-130 ms while the API answers the page's first requests;
# docs/benchmarks.md, "Dashboard in the browser"). Files without a hash (Swagger UI's, under swagger/)
# are revalidated, and so is index.html, which names the current chunks.
_HASHED_ASSET = re.compile(r"^[^/]+-[A-Za-z0-9_-]{8}\.(?:js|css|woff2?|svg|png)$")
IMMUTABLE = "public, max-age=31536000, immutable"


class DashboardAssets(StaticFiles):
    def file_response(
        self, full_path: Any, stat_result: os.stat_result, scope: Any, status_code: int = 200
    ) -> Any:
        response = super().file_response(full_path, stat_result, scope, status_code)
        if _HASHED_ASSET.match(self.get_path(scope)):
            response.headers["Cache-Control"] = IMMUTABLE
        return response


def _mount_dashboard(app: FastAPI, static: Path) -> None:
    """Serve the built dashboard; unknown non-API paths get index.html (client-side routing). A path
    with a NUL is no page (404); /api paths never reach here (install_api_not_found)."""
    index = static / "index.html"
    if not index.is_file():
        return
    root = static.resolve()
    if (static / "assets").is_dir():
        app.mount("/assets", DashboardAssets(directory=static / "assets"), name="assets")

    @app.get("/{path:path}", include_in_schema=False, name=DASHBOARD_ROUTE)
    def spa(path: str) -> FileResponse:
        if "\x00" in path or is_api_path("/" + path):
            raise NotFound("no such page")
        if path:
            try:
                candidate = (static / path).resolve()
                if candidate.is_file() and root in candidate.parents:
                    return FileResponse(candidate)
            except OSError:  # a name too long for the file system, ...: not a file, a client-side route
                pass
        return FileResponse(index, headers={"Cache-Control": "no-cache"})
