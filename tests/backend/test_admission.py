"""At most ``limit`` API requests of a process in flight; the rest wait on the event loop (no thread, no
connection held), event streams aside. Without it a load burst deadlocked the connection pool
(bench/load_test.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from backend.http.admission import AdmissionLimit


def test_requests_beyond_the_limit_wait_their_turn_and_streams_do_not_count() -> None:
    inside = 0
    peak = 0

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        nonlocal inside, peak
        inside += 1
        peak = max(peak, inside)
        await asyncio.sleep(0.05 if not scope["path"].endswith("/events") else 0.2)
        inside -= 1

    limited = AdmissionLimit(app, limit=2)

    def scope(path: str) -> dict[str, Any]:
        return {"type": "http", "method": "GET", "path": path}

    async def main() -> None:
        await asyncio.gather(*(limited(scope(f"/api/v1/runs/{i}"), None, None) for i in range(6)))

    asyncio.run(main())
    assert peak == 2  # six requests, never more than two at once, all answered

    async def with_streams() -> None:
        streams = [limited(scope(f"/api/v1/runs/{i}/events"), None, None) for i in range(3)]
        await asyncio.gather(*streams, *(limited(scope("/api/v1/runs"), None, None) for _ in range(2)))

    peak = 0
    asyncio.run(with_streams())
    assert peak == 5  # three open streams did not take the two request slots
