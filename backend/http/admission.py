"""Admission control: at most ``limit`` API requests of one process in flight at once; the rest wait
their turn on the event loop, holding no thread and no database connection.

Why (bench/load_test.py, docs/benchmarks.md "Load test"): a request holds its pooled connection from its
first query to its commit and needs several thread-pool turns in between. With more requests in flight
than pooled connections (10 + 20 overflow), every pool thread ended up waiting for a connection until the
30 s timeout and one process stopped answering within a minute under 50 workers and 20 dashboards. Kept
below the pool, requests queue instead (a limit of 20 answered that load for 10 minutes with flat memory).
Event streams are not counted: they hold a connection only for each short poll.

A request's body is read before it gets here (backend/http/limits.py, outside this middleware), within a
deadline: a client that sends its body slowly waits in its own read and holds no slot (25
anonymous logins that never finished their bodies held the 20 slots and stalled the API). The artifact
upload alone streams its body inside its slot, under the same deadline, and only with a credential.
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Receive, Scope, Send


class AdmissionLimit:
    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit
        self._slots: asyncio.Semaphore | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/api/") or _is_event_stream(scope):
            await self.app(scope, receive, send)
            return
        if self._slots is None:  # made on the serving loop
            self._slots = asyncio.Semaphore(self.limit)
        async with self._slots:
            await self.app(scope, receive, send)


def _is_event_stream(scope: Scope) -> bool:
    return scope["method"] == "GET" and scope["path"].endswith("/events")
