"""``--profile``: accounting inside the API process (per route, SQL, pool waits, thread-pool hops), the
event loop's lag, per-thread CPU and a wall-clock stack sampler; written as JSON for the report."""

from __future__ import annotations

import asyncio
import collections
import contextvars
import json
import os
import re
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._common import ROOT
from bench.load.sampling import cpu_seconds

_ID = re.compile(r"/\d+(?=/|$)")
_WS = re.compile(r"\s+")


@dataclass
class RouteAcc:
    requests: int = 0
    headers_s: float = 0.0  # request received -> response headers sent (for a stream: its opening)
    sql_n: int = 0
    sql_s: float = 0.0
    pool_n: int = 0
    pool_s: float = 0.0  # waiting for a pooled connection
    hops: int = 0
    hop_wait_s: float = 0.0  # submitted to the thread pool -> running in a thread
    hop_run_s: float = 0.0  # in the thread (SQL included)


class ApiProfile:
    """Accounting for the --profile API process; every number is over the measured window only."""

    def __init__(self, control: Path, sample_ms: float) -> None:
        self.control = control
        self.sample_s = sample_ms / 1000
        self.active = False
        self.lock = threading.Lock()
        self.routes: dict[str, RouteAcc] = collections.defaultdict(RouteAcc)
        self.sql: collections.Counter[tuple[str, str]] = collections.Counter()
        self.sql_n: collections.Counter[tuple[str, str]] = collections.Counter()
        self.loop_lag: list[float] = []
        self.pool_busy: list[int] = []
        self.pool_waiting: list[int] = []
        self.incl: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        self.leaf: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        self.nsamples: collections.Counter[str] = collections.Counter()
        self.cpu0: dict[int, tuple[str, float]] = {}
        self.t0 = 0.0
        self.req: contextvars.ContextVar[RouteAcc | None] = contextvars.ContextVar(
            "rl_load_req", default=None
        )
        self.label: contextvars.ContextVar[str] = contextvars.ContextVar("rl_load_label", default="(none)")

    # instrumentation
    def install(self) -> None:
        import anyio.to_thread
        from sqlalchemy import event
        from sqlalchemy.engine import Engine
        from sqlalchemy.pool.impl import QueuePool

        prof = self
        run_sync = anyio.to_thread.run_sync

        async def timed_run_sync(func: Any, *args: Any, **kw: Any) -> Any:
            acc = prof.req.get()
            if acc is None or not prof.active:
                return await run_sync(func, *args, **kw)
            submitted = time.perf_counter()

            def in_thread(*a: Any) -> Any:
                started = time.perf_counter()
                try:
                    return func(*a)
                finally:
                    ended = time.perf_counter()
                    with prof.lock:
                        acc.hops += 1
                        acc.hop_wait_s += started - submitted
                        acc.hop_run_s += ended - started

            return await run_sync(in_thread, *args, **kw)

        anyio.to_thread.run_sync = timed_run_sync  # type: ignore[assignment]

        do_get = QueuePool._do_get

        def timed_do_get(pool: Any) -> Any:
            t = time.perf_counter()
            try:
                return do_get(pool)
            finally:
                acc = prof.req.get()
                if acc is not None and prof.active:
                    waited = time.perf_counter() - t
                    with prof.lock:
                        acc.pool_n += 1
                        acc.pool_s += waited

        QueuePool._do_get = timed_do_get  # type: ignore[method-assign]

        @event.listens_for(Engine, "before_cursor_execute")
        def _before(conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
            conn.info.setdefault("rl_load_t", []).append(time.perf_counter())

        @event.listens_for(Engine, "after_cursor_execute")
        def _after(conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
            secs = time.perf_counter() - conn.info["rl_load_t"].pop()
            acc = prof.req.get()
            if acc is None or not prof.active:
                return
            key = (prof.label.get(), _WS.sub(" ", statement)[:160])
            with prof.lock:
                acc.sql_n += 1
                acc.sql_s += secs
                prof.sql[key] += secs
                prof.sql_n[key] += 1

    def wrap(self, app: Any) -> Any:
        prof = self
        state: dict[str, Any] = {"probe": None}

        async def accounted(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            if state["probe"] is None:
                state["probe"] = asyncio.get_running_loop().create_task(prof.loop_probe())
            label = f"{scope['method']} {_ID.sub('/{id}', scope['path'])}"
            acc = prof.routes[label]
            t0 = time.perf_counter()
            t1 = prof.req.set(acc)
            t2 = prof.label.set(label)

            async def timed_send(message: Any) -> None:
                if message["type"] == "http.response.start" and prof.active:
                    acc.requests += 1
                    acc.headers_s += time.perf_counter() - t0
                await send(message)

            try:
                await app(scope, receive, timed_send)
            finally:
                prof.req.reset(t1)
                prof.label.reset(t2)

        return accounted

    async def loop_probe(self) -> None:
        import anyio.to_thread

        limiter = anyio.to_thread.current_default_thread_limiter()
        while True:
            t = time.perf_counter()
            await asyncio.sleep(0.05)
            if self.active:
                self.loop_lag.append(time.perf_counter() - t - 0.05)
                self.pool_busy.append(int(limiter.borrowed_tokens))
                self.pool_waiting.append(limiter.statistics().tasks_waiting)

    # threads
    def thread_cpu(self) -> dict[int, tuple[str, float]]:
        out = {}
        for entry in os.scandir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{entry.name}/comm") as f:
                    comm = f.read().strip()
            except OSError:
                continue
            out[int(entry.name)] = (comm, cpu_seconds(f"self/task/{entry.name}"))
        return out

    def sampler(self) -> None:
        """Wall-clock stacks of every thread (it needs the GIL, so it samples at switch points)."""
        me = threading.get_ident()
        main = threading.main_thread().ident
        prefixes = sorted({str(ROOT) + "/", *(p + "/" for p in sys.path if p)}, key=len, reverse=True)

        def where(code: Any) -> str:
            name = code.co_filename
            for p in prefixes:
                if name.startswith(p):
                    name = name[len(p) :]
                    break
            return f"{name}:{code.co_name}"

        deadline = time.monotonic() + 6 * 3600
        while time.monotonic() < deadline:
            if not self.active and (self.control / "start").exists():
                self.cpu0 = self.thread_cpu()
                self.t0 = time.monotonic()
                self.active = True
            if self.active and (self.control / "stop").exists():
                self.active = False
                self.write_report()
                return
            time.sleep(self.sample_s)
            if not self.active:
                continue
            for tid, frame in sys._current_frames().items():
                if tid == me:
                    continue
                kind = "event loop" if tid == main else "threads"
                self.nsamples[kind] += 1
                seen = set()
                f: Any = frame
                self.leaf[kind][where(f.f_code)] += 1
                while f is not None:
                    w = where(f.f_code)
                    if w not in seen:
                        seen.add(w)
                        self.incl[kind][w] += 1
                    f = f.f_back

    def write_report(self) -> None:
        window = time.monotonic() - self.t0
        cpu1 = self.thread_cpu()
        main_native = threading.main_thread().native_id
        threads_cpu: collections.Counter[str] = collections.Counter()
        for tid, (comm, secs) in cpu1.items():
            used = secs - self.cpu0.get(tid, (comm, 0.0))[1]
            if tid == main_native:
                threads_cpu["event loop (main thread)"] += used
            elif tid == threading.get_native_id():
                threads_cpu["profiler's sampler"] += used
            else:
                threads_cpu["other threads (thread pool)"] += used
        report = {
            "window_s": window,
            "routes": {k: vars(v) for k, v in self.routes.items() if v.requests or v.hops},
            "sql": [
                {"route": r, "statement": s, "seconds": secs, "count": self.sql_n[(r, s)]}
                for (r, s), secs in self.sql.most_common(25)
            ],
            "loop_lag": self.loop_lag,
            "pool_busy": self.pool_busy,
            "pool_waiting": self.pool_waiting,
            "threads_cpu": dict(threads_cpu),
            "nsamples": dict(self.nsamples),
            "incl": {k: v.most_common(60) for k, v in self.incl.items()},
            "leaf": {k: v.most_common(40) for k, v in self.leaf.items()},
        }
        tmp = self.control / "report.tmp"
        tmp.write_text(json.dumps(report))
        tmp.rename(self.control / "report.json")
