"""``--what-if``: experiments, not our code, patched into the API before ``create_app()``."""

from __future__ import annotations

import asyncio
import os
from typing import Any

WHAT_IFS = {
    "admit": "admit=N: at most N API requests in flight per process, event streams excepted (the rest wait "
    "in the event loop, before any thread or connection is taken)",
    "pool": "pool=N: SQLAlchemy pool of N connections, no overflow (ours: 10 + 20 overflow)",
    "threads": "threads=N: N threads in the thread pool (anyio's default: 40)",
    "gzip": "gzip=L: GZipMiddleware at compresslevel L (Starlette's default, which backend/main.py uses: 9)",
    "keys-from-latest": "keys-from-latest: a run's metric keys from metric_latest (a row per key) instead of "
    "SELECT DISTINCT key over the run's points",
}


def apply_what_ifs(spec: str) -> Any:
    """Experiments, not our code: patch the API before create_app(); returns a wrapper for the app."""
    opts = dict(item.partition("=")[::2] for item in spec.split(",") if item)
    for name in opts:
        if name not in WHAT_IFS:
            raise SystemExit(f"unknown what-if {name!r}: {', '.join(WHAT_IFS)}")
    if "gzip" in opts:
        from starlette.middleware import gzip

        level = int(opts["gzip"])
        init = gzip.GZipMiddleware.__init__

        def gzip_init(
            self: Any, app: Any, minimum_size: int = 500, compresslevel: int = 9, **kw: Any
        ) -> None:
            init(self, app, minimum_size=minimum_size, compresslevel=level, **kw)

        gzip.GZipMiddleware.__init__ = gzip_init  # type: ignore[method-assign]
    if "pool" in opts:
        from sqlalchemy import create_engine

        from backend import db

        size = int(opts["pool"])

        def make_engine(url: str) -> Any:
            url = "postgresql+psycopg://" + url.removeprefix("postgresql://").removeprefix(
                "postgresql+psycopg://"
            )
            # JIT off as the API's own engine has it (backend/db.py, make_engine)
            return create_engine(
                url,
                pool_pre_ping=True,
                pool_size=size,
                max_overflow=0,
                connect_args={"options": "-c jit=off"},
            )

        db.make_engine = make_engine
    if "keys-from-latest" in opts:
        from sqlalchemy import select

        from backend.metrics import reads
        from backend.models import MetricLatest

        def keys(session: Any, run_id: int) -> list[str]:
            stmt = select(MetricLatest.key).where(MetricLatest.run_id == run_id).order_by(MetricLatest.key)
            return list(session.scalars(stmt))

        reads.keys = keys
    threads = int(opts["threads"]) if "threads" in opts else None
    admit = int(opts["admit"]) if "admit" in opts else None

    def wrap(app: Any) -> Any:
        state: dict[str, Any] = {}

        async def patched(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            if "ready" not in state:
                import anyio.to_thread

                if threads is not None:
                    anyio.to_thread.current_default_thread_limiter().total_tokens = threads
                state["gate"] = asyncio.Semaphore(admit) if admit is not None else None
                state["ready"] = True
            gate = state["gate"]
            if gate is None or scope["path"].endswith("/events"):
                await app(scope, receive, send)
                return
            async with gate:
                await app(scope, receive, send)

        return patched

    return wrap


def whatif_factory() -> Any:
    """uvicorn --workers N with --what-if: every worker process builds the patched app."""
    wrap = apply_what_ifs(os.environ.get("RL_LOAD_WHATIF", ""))
    from backend.main import create_app

    return wrap(create_app())
