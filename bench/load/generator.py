"""The load: simulated workers posting metrics and heartbeats, simulated dashboards watching their runs."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime as dt
import json
import random
import time
from dataclasses import dataclass, field

import httpx

from bench.load.recorder import Recorder
from reasonlab_sdk import points as compact_points

KEYS = ("loss", "accuracy", "lr", "grad_norm", "tokens_per_s", "val_loss", "epoch", "mem_gb")
MAX_BATCH = 10_000


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
    # the metric body: "compact" (the platform's workers and the SDK: reasonlab_sdk.points) or "json"
    metric_body: str = "compact"


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
        stamp = _iso(time.time())  # one time for the batch: formatted per point it was most of the
        # generator's own CPU for a 10,000-point batch (~50 ms), lag that every client-side latency holds
        points = [
            {"key": k, "step": s, "value": rng.random(), "time": stamp}
            for s in range(step, step + steps)
            for k in plan.keys
        ]
        body: dict[str, object] = (
            {
                "content": compact_points.encode(points, attempt),
                "headers": {"Content-Type": compact_points.CONTENT_TYPE},
            }
            if plan.metric_body == "compact"
            else {"json": {"points": points, "attempt": attempt}}
        )
        resp = await rec.call(client, "POST /runs/{id}/metrics", "POST", f"/runs/{run_id}/metrics", **body)
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
    """useRunEvents: a run read ticket, the stream held open until the end, reopened 2 s after a failure."""
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
        resp = await rec.call(client, "POST /runs/{id}/read-ticket", "POST", f"/runs/{run_id}/read-ticket")
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
