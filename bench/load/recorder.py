"""Client-side recording of the load test: latency and errors per route, the stream delay."""

from __future__ import annotations

import asyncio
import collections
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

REQUEST_TIMEOUT = 60.0  # seconds, the whole request; then it counts as an error
STREAM_OPENING = ("POST /runs/{id}/read-ticket", "GET /runs/{id}/events")


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
        # a few examples of each kind: an HTTP 503's body says which budget answered (busy, the statement
        # timeout, the database), and the first errors of a route are often all of one other kind
        if r.errors[what] <= 3:
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
