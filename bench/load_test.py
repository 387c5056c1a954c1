"""Load test of the API: simulated workers posting metrics and dashboards watching runs, on Postgres.

    .venv/bin/python bench/load_test.py                          # 50 workers, 20 dashboards, 10 minutes
    .venv/bin/python bench/load_test.py --duration 120 --api-processes 2
    .venv/bin/python bench/load_test.py --duration 120 --profile # + where the API's time goes

Setup (started and removed by this script): a fresh Postgres database, our API under uvicorn
(``--api-processes`` N = ``uvicorn --workers N``; background loops off: nothing is dispatched, the runs
are claimed by the simulated workers), one experiment of ``--workers`` diagnostic runs (a seed sweep).
Every simulated worker claims its run with the worker token as ``reasonlab worker`` does (the run's
``attempt``), then, until the end:
  metrics    every ``--flush-interval`` s one ``POST /runs/{id}/metrics`` with ``attempt``: a uniform
             random ``--points-min``..``--points-max`` points (``--keys`` keys x steps, step-major, with a
             time), scaled up by the time the previous post took when that was longer than the interval
             (the SDK's writer buffers while it posts), at most 10,000;
  heartbeat  every ``--heartbeat-interval`` s ``POST /runs/{id}/heartbeat`` with ``attempt`` and progress.
Every dashboard client logs in (a JWT, as the browser) and watches run i of the experiment the way the
dashboard's pages do (frontend/src/hooks):
  stream     ``POST /runs/{id}/events/ticket`` then ``GET /runs/{id}/events?ticket=...`` held open (reopened
             2 s after a failure, as the dashboard does);
  charts     per key, ``GET /runs/{id}/metrics?keys=<key>&max_points=1000`` once the stream reported a
             step past what the chart drew, at most every 1 s (LIVE_REFRESH_MS);
  polls      ``GET /experiments/{id}`` every 1.5 s (livePollMs(50)), ``GET /runs/{id}/metric-keys``
             every 3 s, ``GET /runs/{id}/results`` every 5 s, and ``GET /runs?experiment_id=`` every 5 s
             (the SDK's/CLI's list; the dashboard itself reads the runs from the experiment).
The load generator is one asyncio process (httpx, one client per simulated worker or browser). The
first ``--warmup`` s are not counted. Recorded: latency per route (p50/p90/p99/max, client side, from
the request sent to the whole answer read; for the event stream, to its response headers), errors
(non-2xx, timeouts, dropped streams), stream delay (a metric batch's answer -> the stream's ``metrics``
event that reports its step), and every ``--sample-every`` s: the API processes' RSS and CPU, the CPU of
the Postgres backends of our database, the generator's own CPU and event-loop lag, the load average.

``--profile`` (one API process) runs uvicorn inside this script (``--as-api``, the same app and server
settings) with: per-route accounting (time to the response headers, SQL statements and their time,
waits for a pooled connection, hops to the thread pool with the wait for a thread and the time in it),
the thread pool's occupancy, the event loop's lag, per-thread CPU, and a wall-clock stack sampler
(every thread every ``--sample-ms``). It is reported over the measured window (from the end of the
warm-up until the last request came back).

``--what-if`` (experiments, not our code; with any number of processes) patches the API before
``create_app()``: ``admit=N`` (at most N requests in flight per process, event streams excepted),
``pool=N``, ``threads=N``, ``gzip=L``, ``keys-from-latest``. A request that takes longer than 60 s counts
as an error (timeout); a request still in flight 60 s after the end is cut off and reported.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import contextvars
import datetime as dt
import itertools
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from bench._common import (
    PYTHON,
    ROOT,
    Resources,
    free_port,
    machine,
    quantile,
    reasonlab_env,
    table,
    wait_http,
)

KEYS = ("loss", "accuracy", "lr", "grad_norm", "tokens_per_s", "val_loss", "epoch", "mem_gb")
MAX_BATCH = 10_000
REQUEST_TIMEOUT = 60.0  # seconds, the whole request; then it counts as an error
STREAM_OPENING = ("POST /runs/{id}/events/ticket", "GET /runs/{id}/events")
TICKS = os.sysconf("SC_CLK_TCK")
PAGE_MIB = os.sysconf("SC_PAGE_SIZE") / 2**20

_BOOTSTRAP = """
import json
from backend.bootstrap import ensure_admin, migrate
from backend.settings import Settings
s = Settings()
migrate(s)
c = ensure_admin(s)
print(json.dumps({"token": c.token, "username": c.username, "password": c.password}))
"""


# -- /proc -------------------------------------------------------------------------------------------


def _stat(pid: int | str) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (field 3 = index 0)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def session_pids(sid: int) -> list[int]:
    """Every process of the session we started the API in (the server and its worker processes)."""
    out = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            st = _stat(entry.name)
            if st is not None and int(st[3]) == sid:
                out.append(int(entry.name))
    return out


def rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE_MIB
    except OSError:
        return 0.0


def cpu_seconds(pid: int | str) -> float:
    st = _stat(pid)
    return (int(st[11]) + int(st[12])) / TICKS if st else 0.0


def postgres_pids(db: str) -> list[int]:
    """Postgres backends serving our database (their process title names it)."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if cmd.startswith(b"postgres: ") and f" {db} ".encode() in cmd:
            out.append(int(entry.name))
    return out


def loadavg() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def uptime_line() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


# -- client-side recording ---------------------------------------------------------------------------


@dataclass
class Route:
    samples: list[tuple[float, float]] = field(default_factory=list)  # (monotonic end, seconds)
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    error_examples: list[str] = field(default_factory=list)


class Recorder:
    def __init__(self) -> None:
        self.routes: dict[str, Route] = collections.defaultdict(Route)
        self.measure_from = float("inf")
        self.stream_delay: list[tuple[float, float]] = []
        self.points = 0
        self.inflight: collections.Counter[str] = collections.Counter()

    def ok(self, route: str, secs: float) -> None:
        self.routes[route].samples.append((time.monotonic(), secs))

    def error(self, route: str, what: str, detail: str = "") -> None:
        if time.monotonic() < self.measure_from:
            what = "(warm-up) " + what
        r = self.routes[route]
        r.errors[what] += 1
        if len(r.error_examples) < 5:
            r.error_examples.append(f"{what}: {detail[:300]}")

    async def call(
        self, client: httpx.AsyncClient, route: str, method: str, url: str, **kw: Any
    ) -> httpx.Response | None:
        t0 = time.perf_counter()
        self.inflight[route] += 1
        try:
            resp = await asyncio.wait_for(client.request(method, url, **kw), REQUEST_TIMEOUT)
        except (httpx.TimeoutException, TimeoutError) as exc:
            self.error(route, f"timeout ({REQUEST_TIMEOUT:.0f} s)", repr(exc))
            return None
        except httpx.HTTPError as exc:
            self.error(route, type(exc).__name__, repr(exc))
            return None
        finally:
            self.inflight[route] -= 1
        secs = time.perf_counter() - t0
        if resp.status_code >= 400:
            self.error(route, f"HTTP {resp.status_code}", resp.text)
            return None
        self.ok(route, secs)
        return resp


# -- the simulated workers ---------------------------------------------------------------------------


@dataclass
class Plan:
    end: float
    keys: tuple[str, ...]
    points_min: int
    points_max: int
    flush: float
    heartbeat: float
    poll_experiment: float
    poll_keys: float
    poll_results: float
    poll_runs: float
    chart_refresh: float


def _iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, tz=dt.UTC).isoformat().replace("+00:00", "Z")


async def sleep_until(t: float, end: float) -> bool:
    """Sleep until monotonic ``t``; False when that is past the end of the test."""
    if t >= end:
        await asyncio.sleep(max(0.0, end - time.monotonic()))
        return False
    await asyncio.sleep(max(0.0, t - time.monotonic()))
    return True


async def worker_metrics(
    rec: Recorder,
    client: httpx.AsyncClient,
    plan: Plan,
    run_id: int,
    attempt: int,
    rng: random.Random,
    posted: collections.deque[tuple[int, float]] | None,
    progress: list[int],
) -> None:
    step = 0
    nkeys = len(plan.keys)
    nxt = time.monotonic() + rng.uniform(0, plan.flush)  # spread the workers over the interval
    last_start: float | None = None
    while await sleep_until(nxt, plan.end):
        start = time.monotonic()
        n = rng.randint(plan.points_min, plan.points_max)
        if last_start is not None and start - last_start > plan.flush:  # the SDK buffered meanwhile
            n = int(n * (start - last_start) / plan.flush)
        steps = max(1, min(n, MAX_BATCH) // nkeys)
        now = time.time()
        points = [
            {"key": k, "step": s, "value": rng.random(), "time": _iso(now)}
            for s in range(step, step + steps)
            for k in plan.keys
        ]
        resp = await rec.call(
            client,
            "POST /runs/{id}/metrics",
            "POST",
            f"/runs/{run_id}/metrics",
            json={"points": points, "attempt": attempt},
        )
        last_start = start
        if resp is not None:
            step += steps
            progress[0] = step
            rec.points += len(points)
            if posted is not None:
                posted.append((step - 1, time.monotonic()))
        nxt = max(start + plan.flush, time.monotonic())


async def worker_heartbeat(
    rec: Recorder, client: httpx.AsyncClient, plan: Plan, run_id: int, attempt: int, progress: list[int]
) -> None:
    nxt = time.monotonic() + random.uniform(0, plan.heartbeat)
    while await sleep_until(nxt, plan.end):
        nxt += plan.heartbeat
        body = {"attempt": attempt, "progress": {"done": progress[0], "total": 10**9, "message": "load test"}}
        resp = await rec.call(
            client, "POST /runs/{id}/heartbeat", "POST", f"/runs/{run_id}/heartbeat", json=body
        )
        if resp is not None and resp.json().get("cancel_requested"):
            rec.error("POST /runs/{id}/heartbeat", "cancel_requested", str(run_id))


# -- the simulated dashboards ------------------------------------------------------------------------


@dataclass
class Watch:
    """What one dashboard knows from its run's event stream."""

    latest: dict[str, int] = field(default_factory=dict)  # key -> latest step reported
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    events: int = 0


async def poll(
    rec: Recorder, client: httpx.AsyncClient, plan: Plan, route: str, url: str, every: float
) -> None:
    """A react-query refetchInterval: fixed ticks, a tick skipped while the previous fetch runs."""
    nxt = time.monotonic() + random.uniform(0, every)
    while await sleep_until(nxt, plan.end):
        await rec.call(client, route, "GET", url)
        nxt += every
        while nxt < time.monotonic():
            nxt += every


async def stream(
    rec: Recorder,
    client: httpx.AsyncClient,
    plan: Plan,
    run_id: int,
    watch: Watch,
    posted: collections.deque[tuple[int, float]] | None,
) -> None:
    """useRunEvents: a ticket, the stream held open until the end, reopened 2 s after a failure."""
    route = "GET /runs/{id}/events"
    first_key = plan.keys[0]

    async def follow(ticket: str) -> None:
        t0 = time.perf_counter()
        async with client.stream(
            "GET",
            f"/runs/{run_id}/events",
            params={"ticket": ticket},
            headers={"Accept": "text/event-stream"},
            timeout=httpx.Timeout(30.0, read=60.0),
        ) as r:
            if r.status_code != 200:
                await r.aread()
                rec.error(route, f"HTTP {r.status_code}", r.text)
                return
            rec.ok(route, time.perf_counter() - t0)
            event = ""
            async for line in r.aiter_lines():
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:") and event == "metrics":
                    steps = json.loads(line[5:])["steps"]
                    watch.latest.update(steps)
                    watch.events += 1
                    watch.changed.set()
                    top = steps.get(first_key)
                    now = time.monotonic()
                    while posted and top is not None and posted[0][0] <= top:
                        _, t_posted = posted.popleft()
                        if t_posted >= rec.measure_from:
                            rec.stream_delay.append((now, now - t_posted))
                elif line.startswith("data:") and event == "end":
                    rec.error(route, "stream ended", line)
        rec.error(route, "stream closed by the server")

    while time.monotonic() < plan.end:
        resp = await rec.call(
            client, "POST /runs/{id}/events/ticket", "POST", f"/runs/{run_id}/events/ticket"
        )
        if resp is not None:
            try:
                await asyncio.wait_for(
                    follow(resp.json()["ticket"]), timeout=max(0.01, plan.end - time.monotonic())
                )
            except TimeoutError:  # the end of the test: the browser tab closes
                return
            except httpx.HTTPError as exc:
                rec.error(route, type(exc).__name__, repr(exc))
        await sleep_until(time.monotonic() + 2.0, plan.end)


async def chart(
    rec: Recorder, client: httpx.AsyncClient, plan: Plan, run_id: int, key: str, watch: Watch
) -> None:
    """useZoomableMetric's overview: refetch once the stream reports a step past the drawn one, 1 s later."""
    drawn = -1
    while time.monotonic() < plan.end:
        if watch.latest.get(key, -1) <= drawn:
            watch.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(watch.changed.wait(), timeout=max(0.01, plan.end - time.monotonic()))
            continue
        if drawn >= 0 and not await sleep_until(time.monotonic() + plan.chart_refresh, plan.end):
            return
        resp = await rec.call(
            client,
            "GET /runs/{id}/metrics?keys=<key>&max_points=1000",
            "GET",
            f"/runs/{run_id}/metrics",
            params={"keys": key, "max_points": 1000},
        )
        if resp is not None:
            series = resp.json()["series"].get(key) or {}
            drawn = max(drawn, series.get("step_max") or 0)
        else:
            await asyncio.sleep(plan.chart_refresh)


async def dashboard(
    rec: Recorder,
    client: httpx.AsyncClient,
    plan: Plan,
    experiment_id: int,
    run_id: int,
    posted: collections.deque[tuple[int, float]] | None,
) -> None:
    watch = Watch()
    await asyncio.gather(
        stream(rec, client, plan, run_id, watch, posted),
        poll(
            rec, client, plan, "GET /experiments/{id}", f"/experiments/{experiment_id}", plan.poll_experiment
        ),
        poll(
            rec,
            client,
            plan,
            "GET /runs?experiment_id=",
            f"/runs?experiment_id={experiment_id}",
            plan.poll_runs,
        ),
        poll(rec, client, plan, "GET /runs/{id}/metric-keys", f"/runs/{run_id}/metric-keys", plan.poll_keys),
        poll(rec, client, plan, "GET /runs/{id}/results", f"/runs/{run_id}/results", plan.poll_results),
        *(chart(rec, client, plan, run_id, k, watch) for k in plan.keys),
    )


# -- machine sampling --------------------------------------------------------------------------------


@dataclass
class Sample:
    t: float  # monotonic
    rss: list[float]  # MiB per API process
    api_cpu: float  # CPU seconds of the API processes (cumulative)
    pg_cpu: float  # CPU seconds of our database's Postgres backends (cumulative, live ones)
    gen_cpu: float  # this process
    load1: float
    lag_max: float  # generator event-loop lag since the last sample


class Sampler:
    def __init__(self, api_sid: int, db: str) -> None:
        self.api_sid = api_sid
        self.db = db
        self.samples: list[Sample] = []
        self.loop_lag: list[tuple[float, float]] = []
        self._lag_max = 0.0
        self._pg_seen: dict[int, float] = {}  # backend pid -> its last CPU seconds (backends come and go)
        self._pg_total = 0.0

    def take(self) -> Sample:
        pids = session_pids(self.api_sid)
        for pid in postgres_pids(self.db):
            now = cpu_seconds(pid)
            self._pg_total += now - self._pg_seen.get(pid, 0.0)
            self._pg_seen[pid] = now
        s = Sample(
            t=time.monotonic(),
            rss=[rss_mib(p) for p in sorted(pids)],
            api_cpu=sum(cpu_seconds(p) for p in pids),
            pg_cpu=self._pg_total,
            gen_cpu=sum(os.times()[:2]),
            load1=loadavg(),
            lag_max=self._lag_max,
        )
        self._lag_max = 0.0
        self.samples.append(s)
        return s

    async def lag_probe(self, end: float) -> None:
        while time.monotonic() < end:
            t0 = time.perf_counter()
            await asyncio.sleep(0.1)
            lag = time.perf_counter() - t0 - 0.1
            self.loop_lag.append((time.monotonic(), lag))
            self._lag_max = max(self._lag_max, lag)

    async def run(self, every: float, end: float, rec: Recorder, on_sample: Any) -> None:
        while True:
            s = self.take()
            on_sample(s)
            if not await sleep_until(time.monotonic() + every, end):
                self.take()
                return


# -- API under the bench's profiler (--as-api) ------------------------------------------------------

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
            return create_engine(url, pool_pre_ping=True, pool_size=size, max_overflow=0)

        db.make_engine = make_engine
    if "keys-from-latest" in opts:
        from sqlalchemy import select

        from backend.metrics import repository
        from backend.models import MetricLatest

        def keys(session: Any, run_id: int) -> list[str]:
            stmt = select(MetricLatest.key).where(MetricLatest.run_id == run_id).order_by(MetricLatest.key)
            return list(session.scalars(stmt))

        repository.keys = keys
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


def api_entry(port: int, control: str, sample_ms: float, what_if: str, processes: int) -> int:
    import uvicorn

    level = "info" if processes > 1 else "warning"
    server = {"host": "127.0.0.1", "port": port, "log_level": level, "access_log": False}
    if processes > 1:
        os.environ["RL_LOAD_WHATIF"] = what_if
        uvicorn.run("bench.load_test:whatif_factory", factory=True, workers=processes, **server)
        return 0
    wrap = apply_what_ifs(what_if)
    prof = ApiProfile(Path(control), sample_ms) if control != "-" else None
    if prof is not None:
        prof.install()
    from backend.main import create_app

    app = wrap(create_app())
    if prof is not None:
        app = prof.wrap(app)
        threading.Thread(target=prof.sampler, name="rl-load-sampler", daemon=True).start()
    uvicorn.run(app, timeout_graceful_shutdown=5, **server)
    return 0


# -- driver ------------------------------------------------------------------------------------------


@dataclass
class Setup:
    url: str
    token: str
    worker_token: str
    username: str
    password: str
    proc: subprocess.Popen[bytes]
    db: str
    control: Path | None


def start(res: Resources, args: argparse.Namespace) -> Setup:
    db = res.database("db")
    env = reasonlab_env(res, db)
    out = subprocess.run([PYTHON, "-c", _BOOTSTRAP], env=env, cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"migrate/ensure_admin failed:\n{out.stderr[-3000:]}")
    creds = json.loads(out.stdout.strip().splitlines()[-1])
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env["REASONLAB_API_URL"] = url
    control: Path | None = None
    if args.profile or args.what_if:
        if args.profile:
            control = res.tmp / "profile"
            control.mkdir()
        argv = [
            PYTHON,
            __file__,
            "--as-api",
            str(port),
            str(control or "-"),
            "--sample-ms",
            str(args.sample_ms),
        ]
        argv += ["--what-if", args.what_if, "--api-processes", str(args.api_processes)]
    else:
        argv = [PYTHON, "-m", "uvicorn", "backend.main:create_app", "--factory", "--host", "127.0.0.1"]
        # info, no access log: with N processes the supervisor's "Child process [..] died" (a worker that did
        # not answer its 5 s health check is killed, its connections dropped) is an INFO line
        level = "info" if args.api_processes > 1 else "warning"
        argv += ["--port", str(port), "--log-level", level, "--no-access-log"]
        if args.api_processes > 1:
            argv += ["--workers", str(args.api_processes)]
    proc = res.process("api", argv, env)
    wait_http(f"{url}/api/v1/health", proc, what="ReasonLab API")
    if args.api_processes > 1:  # every worker process answers before the load starts
        deadline = time.monotonic() + 120
        while len(session_pids(proc.pid)) < args.api_processes + 1 and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(3)
    return Setup(
        url,
        creds["token"],
        env["REASONLAB_WORKER_TOKEN"],
        creds["username"],
        creds["password"],
        proc,
        db,
        control,
    )


def make_client(base: str, token: str, connections: int) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=base + "/api/v1",
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx.Timeout(60.0),
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        verify=False,  # plain http on loopback: no TLS context per client
    )


async def drive(args: argparse.Namespace, setup: Setup, rec: Recorder) -> tuple[Sampler, dict[str, Any]]:
    keys = KEYS[: args.keys]
    info: dict[str, Any] = {}
    admin = make_client(setup.url, setup.token, 4)
    body = {
        "name": "load test",
        "kind": "diagnostic",
        "spec": {},
        "sweep": {"seeds": list(range(args.workers))},
    }
    r = await admin.post("/experiments", json=body)
    r.raise_for_status()
    exp = r.json()
    runs = sorted(exp["runs"], key=lambda x: x["index"])
    if len(runs) != args.workers:
        raise RuntimeError(f"the experiment has {len(runs)} runs, expected {args.workers}")
    info["experiment"] = exp["id"]
    workers = [make_client(setup.url, setup.worker_token, 2) for _ in runs]
    attempts = []
    for i, (run, client) in enumerate(zip(runs, workers, strict=True)):
        r = await client.post(
            f"/runs/{run['id']}/claim", json={"attempt": run["attempt"], "worker": f"load-{i}@bench"}
        )
        r.raise_for_status()
        attempts.append(r.json()["attempt"])
    dashboards = []
    for _ in range(args.dashboards):
        r = await admin.post("/auth/login", json={"username": setup.username, "password": setup.password})
        r.raise_for_status()
        dashboards.append(make_client(setup.url, r.json()["access_token"], 6))
    await admin.aclose()

    t_start = time.monotonic()
    rec.measure_from = t_start + args.warmup
    end = rec.measure_from + args.duration
    plan = Plan(
        end=end,
        keys=keys,
        points_min=args.points_min,
        points_max=args.points_max,
        flush=args.flush_interval,
        heartbeat=args.heartbeat_interval,
        poll_experiment=args.poll_experiment,
        poll_keys=3.0,
        poll_results=5.0,
        poll_runs=5.0,
        chart_refresh=1.0,
    )
    sampler = Sampler(setup.proc.pid, setup.db)
    posted: list[collections.deque[tuple[int, float]] | None] = [
        collections.deque() if i < args.dashboards else None for i in range(args.workers)
    ]
    progress = [[0] for _ in runs]
    rng = random.Random(0)
    marks = {"started": False}
    last_print = [0.0, 0]

    def on_sample(s: Sample) -> None:
        if not marks["started"] and s.t >= rec.measure_from:
            marks["started"] = True
            if setup.control is not None:
                (setup.control / "start").touch()
        if s.t - last_print[0] >= args.print_every or s.t >= end:
            n = sum(len(r.samples) for r in rec.routes.values())
            errs = sum(sum(r.errors.values()) for r in rec.routes.values())
            rate = (n - last_print[1]) / max(1e-9, s.t - last_print[0]) if last_print[0] else 0.0
            print(
                f"  t={s.t - t_start:6.0f} s  API RSS {sum(s.rss):7.1f} MiB  load {s.load1:5.2f}  "
                f"{rate:6.1f} req/s  {rec.points:>11,} points  errors {errs}",
                flush=True,
            )
            last_print[0], last_print[1] = s.t, n

    tasks = [sampler.run(args.sample_every, end, rec, on_sample), sampler.lag_probe(end)]
    for i, (run, client) in enumerate(zip(runs, workers, strict=True)):
        wrng = random.Random(rng.random())
        tasks.append(worker_metrics(rec, client, plan, run["id"], attempts[i], wrng, posted[i], progress[i]))
        tasks.append(worker_heartbeat(rec, client, plan, run["id"], attempts[i], progress[i]))
    for i, client in enumerate(dashboards):
        tasks.append(
            dashboard(rec, client, plan, exp["id"], runs[i % len(runs)]["id"], posted[i % len(runs)])
        )
    gen0 = sum(os.times()[:2])
    running = [asyncio.ensure_future(t) for t in tasks]
    try:
        # every loop stops at the end; a request still in flight REQUEST_TIMEOUT s later is cut off
        _, pending = await asyncio.wait(running, timeout=args.warmup + args.duration + REQUEST_TIMEOUT + 15)
        info["unfinished"] = {k: v for k, v in rec.inflight.items() if v}
        for t in pending:
            t.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        for t in running:
            if not t.cancelled() and t.exception() is not None:
                raise t.exception()  # type: ignore[misc]
    finally:
        info["gen_cpu_total"] = sum(os.times()[:2]) - gen0
        if setup.control is not None:
            (setup.control / "stop").touch()
        for c in workers + dashboards:
            await c.aclose()
    return sampler, info


def pct(xs: list[float], q: float) -> float:
    return quantile(xs, q) * 1e3 if xs else float("nan")


def report(
    args: argparse.Namespace, rec: Recorder, sampler: Sampler, setup: Setup, info: dict[str, Any]
) -> None:
    t0, t1 = rec.measure_from, rec.measure_from + args.duration
    window = [s for s in sampler.samples if s.t >= t0 - 1e-6]
    span = window[-1].t - window[0].t if len(window) > 1 else float("nan")
    rows = []
    total_ok = total_err = 0
    for name in sorted(rec.routes):
        r = rec.routes[name]
        opened_once = name in STREAM_OPENING  # once per dashboard at the start (and after a failure)
        xs = [secs for t, secs in r.samples if opened_once or t0 <= t <= t1 + 120]
        errs = sum(n for what, n in r.errors.items() if not what.startswith("(warm-up)"))
        total_ok += len(xs)
        total_err += errs
        rows.append(
            [
                name + (" (all, warm-up included)" if opened_once else ""),
                f"{len(xs):,}",
                f"{len(xs) / args.duration:.1f}",
                f"{pct(xs, 0.5):.0f}",
                f"{pct(xs, 0.9):.0f}",
                f"{pct(xs, 0.99):.0f}",
                f"{max(xs) * 1e3:.0f}" if xs else "-",
                str(errs),
            ]
        )
    print()
    print(
        f"measured window: {args.duration:.0f} s (after {args.warmup:.0f} s warm-up); client-side latency, ms"
    )
    print(table(["route", "requests", "per s", "p50", "p90", "p99", "max", "errors"], rows))
    delays = [d for _, d in rec.stream_delay]
    print(
        f"stream delay (metric batch answered -> the stream's metrics event with its step): p50 {pct(delays, 0.5):.0f} ms, "
        f"p90 {pct(delays, 0.9):.0f} ms, p99 {pct(delays, 0.99):.0f} ms (n={len(delays):,})"
    )
    print(f"requests: {total_ok:,} answered, {total_err} errors; {rec.points:,} metric points stored")
    if info.get("unfinished"):
        print(f"  still in flight {REQUEST_TIMEOUT:.0f} s after the end (cut off): {info['unfinished']}")
    errs = collections.Counter(w for r in rec.routes.values() for w, n in r.errors.items() for _ in range(n))
    if errs:
        print(f"  errors by kind: {dict(errs)}")
    for name, r in sorted(rec.routes.items()):
        for ex in r.error_examples:
            print(f"  error {name}: {ex}")
    if window:
        rss = [sum(s.rss) for s in window]
        slope = _slope([(s.t - t0) / 60 for s in window], rss)
        per_proc = ", ".join(f"{x:.0f}" for x in window[-1].rss)
        a, b = window[0], window[-1]
        print(
            f"API RSS (all {len(b.rss)} process(es), MiB): start {rss[0]:.1f}, end {rss[-1]:.1f}, max {max(rss):.1f}, "
            f"min {min(rss):.1f}; trend {slope:+.2f} MiB/min (least squares over {len(window)} samples every "
            f"{args.sample_every:.0f} s); per process at the end: {per_proc}"
        )
        print(
            f"CPU over the window (share of one core): API {100 * (b.api_cpu - a.api_cpu) / span:.0f}%, Postgres "
            f"backends of our db {100 * (b.pg_cpu - a.pg_cpu) / span:.0f}%, load generator "
            f"{100 * (b.gen_cpu - a.gen_cpu) / span:.0f}% (machine: {os.cpu_count()} cores)"
        )
        loads = [s.load1 for s in window]
        print(
            f"load average (1 min) during the window: min {min(loads):.2f}, mean {sum(loads) / len(loads):.2f}, max {max(loads):.2f}"
        )
    lags = [lag for t, lag in sampler.loop_lag if t0 <= t <= t1]
    print(
        f"generator event-loop lag (100 ms probe): p50 {pct(lags, 0.5):.1f} ms, p99 {pct(lags, 0.99):.1f} ms, "
        f"max {max(lags, default=0) * 1e3:.0f} ms"
    )
    # the timeline: one row per minute
    print()
    rows = []
    step = max(60.0, args.sample_every)
    edges = [t0 + i * step for i in range(int(args.duration // step) + 1)] + [t1]
    edges = sorted(set(edges))
    for lo, hi in itertools.pairwise(edges):
        if hi - lo < 1:
            continue
        lat = [secs for r in rec.routes.values() for t, secs in r.samples if lo <= t < hi]
        ing = [secs for t, secs in rec.routes["POST /runs/{id}/metrics"].samples if lo <= t < hi]
        ss = [s for s in sampler.samples if lo <= s.t <= hi + 1e-6]
        if len(ss) < 2:
            continue
        d = ss[-1].t - ss[0].t
        rows.append(
            [
                f"{lo - t0:.0f}-{hi - t0:.0f}",
                f"{len(lat) / (hi - lo):.0f}",
                f"{pct(lat, 0.5):.0f}",
                f"{pct(lat, 0.99):.0f}",
                f"{pct(ing, 0.5):.0f}",
                f"{pct(ing, 0.99):.0f}",
                f"{sum(ss[-1].rss):.0f}",
                f"{100 * (ss[-1].api_cpu - ss[0].api_cpu) / d:.0f}",
                f"{100 * (ss[-1].pg_cpu - ss[0].pg_cpu) / d:.0f}",
                f"{100 * (ss[-1].gen_cpu - ss[0].gen_cpu) / d:.0f}",
                f"{max(s.load1 for s in ss):.1f}",
            ]
        )
    print(
        table(
            [
                "window s",
                "req/s",
                "all p50",
                "all p99",
                "ingest p50",
                "ingest p99",
                "RSS MiB",
                "API CPU%",
                "PG CPU%",
                "gen CPU%",
                "load",
            ],
            rows,
        )
    )


def _slope(xs: list[float], ys: list[float]) -> float:
    if len(xs) < 2:
        return float("nan")
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else float("nan")


def profile_report(control: Path) -> None:
    path = control / "report.json"
    deadline = time.monotonic() + 60
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    if not path.exists():
        print("profile: no report from the API process", file=sys.stderr)
        return
    p = json.loads(path.read_text())
    win = p["window_s"]
    print(f"\n## API profile ({win:.0f} s window, one process)\n")
    rows = []
    for name, a in sorted(p["routes"].items(), key=lambda kv: -kv[1]["headers_s"]):
        n = max(1, a["requests"])
        rows.append(
            [
                name,
                f"{a['requests']:,}",
                f"{1e3 * a['headers_s'] / n:.0f}",
                f"{a['hops'] / n:.1f}",
                f"{1e3 * a['hop_wait_s'] / n:.0f}",
                f"{1e3 * a['hop_run_s'] / n:.0f}",
                f"{a['sql_n'] / n:.1f}",
                f"{1e3 * a['sql_s'] / n:.1f}",
                f"{1e3 * a['pool_s'] / n:.1f}",
                f"{a['hop_run_s'] / win:.2f}",
            ]
        )
    print(
        "per request, mean (ms): server time to the response headers; thread-pool hops, wait for a thread and"
    )
    print(
        "time in threads; SQL statements and their time; wait for a pooled connection; thread time / window"
    )
    print("(for the event stream: per opened stream, its 0.5 s polls included)")
    print(
        table(
            [
                "route",
                "requests",
                "server ms",
                "hops",
                "hop wait ms",
                "in thread ms",
                "SQL n",
                "SQL ms",
                "pool wait ms",
                "thread s/s",
            ],
            rows,
        )
    )
    lag, busy, waiting = p["loop_lag"], p["pool_busy"], p["pool_waiting"]
    print(
        f"API event loop lag (50 ms probe): p50 {pct(lag, 0.5):.0f} ms, p99 {pct(lag, 0.99):.0f} ms, max "
        f"{max(lag, default=0) * 1e3:.0f} ms; thread pool (40 threads): busy mean {sum(busy) / max(1, len(busy)):.1f}, "
        f"max {max(busy, default=0)}; tasks waiting for a thread mean {sum(waiting) / max(1, len(waiting)):.1f}, "
        f"max {max(waiting, default=0)}"
    )
    print(
        "API CPU by thread (share of one core): "
        + ", ".join(
            f"{k} {100 * v / win:.0f}%" for k, v in sorted(p["threads_cpu"].items(), key=lambda kv: -kv[1])
        )
    )
    print("\ntop SQL by total time (route, statement, count, total s, mean ms):")
    for s in p["sql"][:15]:
        print(
            f"  {s['seconds']:7.1f} s {s['count']:>8,}x {1e3 * s['seconds'] / s['count']:6.2f} ms  {s['route']}: {s['statement'][:110]}"
        )
    for kind in ("event loop", "threads"):
        n = p["nsamples"].get(kind, 0)
        if not n:
            continue
        print(f"\nwall-clock samples, {kind} ({n:,} thread-samples): inclusive share, top frames")
        for name, c in p["incl"].get(kind, [])[:45]:
            print(f"  {100 * c / n:5.1f}%  {name}")
        print(
            "  leaf (where the thread was): "
            + "; ".join(f"{name} {100 * c / n:.1f}%" for name, c in p["leaf"][kind][:12])
        )


_LOG_LINE = re.compile(r"^(ERROR|WARNING|CRITICAL|INFO):|^\S*(Error|Exception)\b[:(]")


def api_log_summary(path: Path) -> None:
    """What the API logged: error and warning lines and exception types, counted (digits masked)."""
    if not path.is_file():
        return
    counts: collections.Counter[str] = collections.Counter()
    for line in path.read_text(errors="replace").splitlines():
        if _LOG_LINE.match(line):
            counts[re.sub(r"\d+", "N", line)[:160]] += 1
    if counts:
        print("\nAPI log (lines counted, digits masked as N):")
        for line, n in counts.most_common(12):
            print(f"  {n:>6,}x  {line}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=600.0, help="measured seconds (default 10 minutes)")
    ap.add_argument("--warmup", type=float, default=15.0, help="seconds of load before measuring")
    ap.add_argument("--workers", type=int, default=50, help="simulated workers (= runs)")
    ap.add_argument("--dashboards", type=int, default=20, help="simulated dashboard clients")
    ap.add_argument("--keys", type=int, default=4, help=f"metric keys per run (1..{len(KEYS)})")
    ap.add_argument("--points-min", type=int, default=100)
    ap.add_argument("--points-max", type=int, default=1000)
    ap.add_argument("--flush-interval", type=float, default=1.0, help="seconds between a worker's batches")
    ap.add_argument("--heartbeat-interval", type=float, default=5.0)
    ap.add_argument("--poll-experiment", type=float, default=1.5, help="GET /experiments/{id} period")
    ap.add_argument("--api-processes", type=int, default=1, help="uvicorn --workers")
    ap.add_argument("--profile", action="store_true", help="profile the API (one process)")
    ap.add_argument("--sample-ms", type=float, default=50.0, help="--profile's stack sampling period")
    ap.add_argument("--sample-every", type=float, default=5.0, help="seconds between RSS/CPU/load samples")
    ap.add_argument("--print-every", type=float, default=60.0, help="seconds between progress lines")
    ap.add_argument(
        "--what-if",
        default="",
        help="experiments, not our code, comma-separated: " + "; ".join(WHAT_IFS.values()),
    )
    ap.add_argument("--keep-logs", action="store_true")
    ap.add_argument("--as-api", nargs=2, metavar=("PORT", "CONTROL_DIR"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.as_api:
        return api_entry(
            int(args.as_api[0]), args.as_api[1], args.sample_ms, args.what_if, args.api_processes
        )
    if args.profile and args.api_processes != 1:
        ap.error("--profile runs one API process")
    if not 1 <= args.keys <= len(KEYS) or args.dashboards > args.workers:
        ap.error("--keys out of range, or more dashboards than runs")

    print(f"machine: {machine()}")
    print(f"uptime at start: {uptime_line()}")
    print(
        f"{args.workers} workers x {args.points_min}-{args.points_max} points every {args.flush_interval} s "
        f"({args.keys} keys) + heartbeat every {args.heartbeat_interval} s; {args.dashboards} dashboards; "
        f"{args.api_processes} API process(es){' under the profiler' if args.profile else ''}"
        f"{'; WHAT-IF (not our code): ' + args.what_if if args.what_if else ''}; "
        f"{args.duration:.0f} s measured after {args.warmup:.0f} s"
    )
    rec = Recorder()
    with Resources("load") as res:
        res.keep_logs = args.keep_logs
        try:
            setup = start(res, args)
            sampler, info = asyncio.run(drive(args, setup, rec))
            print(f"uptime at end: {uptime_line()}")
            report(args, rec, sampler, setup, info)
            if setup.control is not None:
                profile_report(setup.control)
        except BaseException:
            res.keep_logs = True
            print(f"--- api log tail ---\n{res.log_tail('api')}", file=sys.stderr)
            raise
        api_log_summary(res.logs / "api.log")
    return 0


if __name__ == "__main__":
    sys.exit(main())
