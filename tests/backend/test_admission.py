"""At most ``limit`` API requests of a process in flight; the rest wait on the event loop (no thread, no
connection held), event streams aside. Without it a load burst deadlocked the connection pool
(bench/load_test.py). One credential holds at most its share of them, and a route waiting on
its client gives its slot back."""

from __future__ import annotations

import asyncio
from typing import Any

from backend.http.admission import PRINCIPAL, AdmissionLimit, released


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


def _scope_of(path: str, principal: str | None) -> dict[str, Any]:
    return {"type": "http", "method": "GET", "path": path, PRINCIPAL: principal}


def test_one_credential_holds_at_most_its_share_and_the_others_go_first() -> None:
    """Six requests of one credential and 2 of another, 4 slots, a share of 2: the first never
    holds more than 2 slots, so the other's requests are served while the first's still wait; the worker
    token has no share."""
    inside: dict[str, int] = {}
    peak: dict[str, int] = {}
    order: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        who = scope[PRINCIPAL]
        inside[who] = inside.get(who, 0) + 1
        peak[who] = max(peak.get(who, 0), inside[who])
        order.append(who)
        await asyncio.sleep(0.05)
        inside[who] -= 1

    limited = AdmissionLimit(app, limit=4, per_principal=2)

    async def main() -> None:
        greedy = [limited(_scope_of("/api/v1/runs", "user:1"), None, None) for _ in range(6)]
        await asyncio.gather(
            *greedy, *(limited(_scope_of("/api/v1/runs", "user:2"), None, None) for _ in range(2))
        )

    asyncio.run(main())
    assert peak == {"user:1": 2, "user:2": 2}
    assert order.index("user:2") < 4 and order.count("user:2") == 2  # not queued behind the six
    assert not limited._shares  # nothing kept for credentials with no request in flight

    peak.clear()
    inside.clear()

    async def workers() -> None:
        await asyncio.gather(
            *(limited(_scope_of("/api/v1/runs/1/claim", "worker"), None, None) for _ in range(4))
        )

    asyncio.run(workers())
    assert peak == {"worker": 4}


def test_a_route_gives_its_slot_back_while_it_waits_on_its_client() -> None:
    """A streamed upload's copy (``released``, backend/http/transfers.py) holds no slot: with one slot,
    a request is served while an upload waits for its bytes, and the upload takes a slot again after."""
    events: list[str] = []

    async def main() -> None:
        arrived = asyncio.Event()  # the upload's body

        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["path"].endswith("/upload"):
                events.append("upload in")
                async with released(scope):
                    await arrived.wait()
                    events.append("upload copied")
                events.append("upload holds a slot again")
                await asyncio.sleep(0.01)
            else:
                events.append("read")
                arrived.set()

        limited = AdmissionLimit(app, limit=1)
        upload = asyncio.create_task(limited(_scope_of("/api/v1/upload", "user:1"), None, None))
        await asyncio.sleep(0.01)
        await asyncio.wait_for(limited(_scope_of("/api/v1/runs", "user:2"), None, None), timeout=10)
        await asyncio.wait_for(upload, timeout=10)
        assert limited._slots is not None and not limited._slots.locked()  # every slot back

    asyncio.run(main())
    assert events == ["upload in", "read", "upload copied", "upload holds a slot again"]


def test_reads_hold_at_most_their_places_and_writes_pass_them() -> None:
    """Eight GETs and two POSTs, 4 slots of which reads may hold 2: never more than 2 reads in flight,
    and the writes are served while six reads still wait (they are not queued behind them); the health
    check is no read. A read cancelled while it waits gives back what it took."""
    inside = {"GET": 0, "POST": 0}
    peak = {"GET": 0, "POST": 0}
    order: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        method = scope["method"]
        inside[method] += 1
        peak[method] = max(peak[method], inside[method])
        order.append(method)
        await asyncio.sleep(0.05)
        inside[method] -= 1

    limited = AdmissionLimit(app, limit=4, reads=2)

    def scope(method: str, who: str) -> dict[str, Any]:
        return {"type": "http", "method": method, "path": "/api/v1/runs/1/metrics", PRINCIPAL: who}

    async def main() -> None:
        reads = [limited(scope("GET", f"user:{i}"), None, None) for i in range(8)]
        writes = [limited(scope("POST", f"run:{i}"), None, None) for i in range(2)]
        await asyncio.gather(*reads, *writes)

    asyncio.run(main())
    assert peak == {"GET": 2, "POST": 2}
    assert order.index("POST") < 4 and order[:4].count("POST") == 2  # not behind the six waiting reads

    async def probes() -> None:  # four health checks at once with reads=1: not held to the reads' bound
        probe = {"type": "http", "method": "GET", "path": "/api/v1/health", PRINCIPAL: None}
        await asyncio.gather(*(limited({**probe}, None, None) for _ in range(4)))

    peak["GET"] = 0
    limited = AdmissionLimit(app, limit=4, reads=1)
    asyncio.run(probes())
    assert peak["GET"] == 4

    async def cancelled() -> None:
        """A read that holds its credential's share and its read place, queued for a slot behind two
        writes, is cancelled (its client left): it gives both back, and every count is whole again."""
        blocker = asyncio.Event()

        async def slow(scope: dict[str, Any], receive: Any, send: Any) -> None:
            await blocker.wait()

        gate = AdmissionLimit(slow, limit=2, per_principal=1, reads=1)
        writes = [asyncio.create_task(gate(scope("POST", f"run:{i}"), None, None)) for i in range(2)]
        await asyncio.sleep(0.01)
        waiting = asyncio.create_task(gate(scope("GET", "user:1"), None, None))
        await asyncio.sleep(0.01)
        assert gate._reads is not None and gate._slots is not None
        assert gate._reads._value == 0 and gate._shares["user:1"].slots._value == 0  # taken, queued on a slot
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        assert gate._reads._value == 1 and "user:1" not in gate._shares  # given back, forgotten
        # the next read of the same credential is served once a write ends
        again = asyncio.create_task(gate(scope("GET", "user:1"), None, None))
        blocker.set()
        await asyncio.gather(*writes, again)
        assert gate._reads._value == 1 and gate._slots._value == 2 and not gate._shares

    asyncio.run(cancelled())
