"""Admission control: at most ``limit`` API requests of one process in flight at once, and at most
``per_principal`` of them from one credential; the rest wait their turn on the event loop, holding no
thread and no database connection.

Why (bench/load_test.py, docs/benchmarks.md "Load test"): a request holds its pooled connection from its
first query to its commit and needs several thread-pool turns in between. With more requests in flight
than pooled connections (10 + 20 overflow), every pool thread ended up waiting for a connection until the
30 s timeout and one process stopped answering within a minute under 50 workers and 20 dashboards. Kept
below the pool, requests queue instead (a limit of 20 answered that load for 10 minutes with flat memory).
Event streams are not counted: they hold a connection only for each short poll.

Shares: one member's script must not take every slot. A request's credential is named by the
request edge (``PRINCIPAL``, set by backend/http/limits.py: a user, an API token, a run, the worker
token, or anonymous); a credential's requests past its share wait for its own earlier ones before they
even queue for a slot, so the others' requests go first. The worker token (claims and releases of the
whole fleet, a credential the operator holds) has no share of its own.

A request's body is read before it gets here (backend/http/limits.py, outside this middleware), within a
minimum rate: a client that sends its body slowly waits in its own read and holds no slot. The streamed
uploads (artifacts, datasets) are read by their routes: a route gives its slot back while it copies the
body (``released``, backend/http/transfers.py ``copy_body``) and takes one again for what follows, so an
upload holds a slot only for its database work (22 slow dataset uploads held the 20 slots and another
user's reads timed out); how many uploads are received at once is bounded at the edge instead.

Reads may yield to writes (off by default): with ``reads`` below ``limit``, GET and HEAD requests hold at
most ``reads`` of the slots at once (the health check aside), so that in a process serving both a burst of
dashboard polls cannot take every slot, nor every turn of the interpreter, from the metric posts and
heartbeats of running jobs; the further reads queue on the event loop, where waiting costs nothing. A
read takes its credential's share first, so one credential's queued reads never hold read places. Compose
separates the runs' writes into a process of their own instead (the `ingest` service,
docs/operations.md); the bound is for a deployment that cannot, at the dashboards' expense
(docs/benchmarks.md, "Load test": a bound of 2 took write p99 from 2.0 to 0.94 s and the reads' from 7.1
to 7.6 s). Streamed downloads hold their read place while they send.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from starlette.types import ASGIApp, Receive, Scope, Send

# the scope keys: the request's credential as the edge named it, and its admission ticket
PRINCIPAL = "reasonlab.principal"
TICKET = "reasonlab.admission"
UNSHARED = "worker"  # the credential without a share (the worker token: the operator's, all workers')


class _Share:
    def __init__(self, limit: int) -> None:
        self.slots = asyncio.Semaphore(limit)
        self.users = 0  # tickets of this credential alive (waiting or holding)


class AdmissionLimit:
    def __init__(
        self, app: ASGIApp, limit: int, per_principal: int | None = None, reads: int | None = None
    ) -> None:
        self.app = app
        self.limit = limit
        self.per_principal = per_principal if per_principal is not None else limit
        self.reads = reads if reads is not None else limit
        self._slots: asyncio.Semaphore | None = None
        self._reads: asyncio.Semaphore | None = None
        self._shares: dict[str, _Share] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/api/") or _is_event_stream(scope):
            await self.app(scope, receive, send)
            return
        if self._slots is None:  # made on the serving loop
            self._slots = asyncio.Semaphore(self.limit)
            self._reads = asyncio.Semaphore(self.reads)
        reads = self._reads if self.reads < self.limit and _is_read(scope) else None
        ticket = Ticket(self, self._slots, self._share(scope.get(PRINCIPAL)), reads)
        try:
            await ticket.acquire()
            scope[TICKET] = ticket
            await self.app(scope, receive, send)
        finally:
            ticket.close()

    def _share(self, principal: str | None) -> tuple[str, _Share] | None:
        if principal is None or principal == UNSHARED or self.per_principal >= self.limit:
            return None
        share = self._shares.get(principal)
        if share is None:
            share = self._shares[principal] = _Share(self.per_principal)
        share.users += 1
        return principal, share

    def _forget(self, principal: str, share: _Share) -> None:
        share.users -= 1
        if share.users == 0 and self._shares.get(principal) is share:
            del self._shares[principal]


class Ticket:
    """A request's admission: its credential's share, then (a read) one of the reads' places, then one of
    the process's slots."""

    def __init__(
        self,
        owner: AdmissionLimit,
        slots: asyncio.Semaphore,
        share: tuple[str, _Share] | None,
        reads: asyncio.Semaphore | None = None,
    ):
        self._owner, self._share = owner, share
        # taken in this order, given back in the reverse
        self._gates = [g for g in (share[1].slots if share else None, reads, slots) if g is not None]
        self.held = False

    async def acquire(self) -> None:
        if self.held:
            return
        taken: list[asyncio.Semaphore] = []
        try:
            for gate in self._gates:
                await gate.acquire()
                taken.append(gate)
        except BaseException:  # cancelled while queued (the client left): what it took is given back
            for gate in reversed(taken):
                gate.release()
            raise
        self.held = True

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        for gate in reversed(self._gates):
            gate.release()

    def close(self) -> None:
        self.release()
        if self._share is not None:
            self._owner._forget(*self._share)
            self._share = None


@contextlib.asynccontextmanager
async def released(scope: Scope) -> AsyncIterator[None]:
    """The request's slot (and its share) given back for the block and taken again after it: for a
    route's wait on its client (a streamed body), during which it holds no database connection. A block
    that raises leaves the request without a slot (what follows is its failure's answer, no queueing for
    it). A no-op outside the admission middleware."""
    ticket: Ticket | None = scope.get(TICKET)
    if ticket is None:
        yield
        return
    ticket.release()
    yield
    await ticket.acquire()


_READS = frozenset({"GET", "HEAD"})
_HEALTH = "/api/v1/health"


def _is_read(scope: Scope) -> bool:
    """A request the reads' bound counts: GET and HEAD, but the health check (a probe that waits behind
    the dashboards would report a healthy process dead)."""
    return scope["method"] in _READS and scope["path"].rstrip("/") != _HEALTH


def _is_event_stream(scope: Scope) -> bool:
    return scope["method"] == "GET" and scope["path"].endswith("/events")
