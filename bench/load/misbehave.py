"""``--misbehave N``: N project members (at most 5), each with its own credential, break the API's
per-request budgets at once while the well-behaved load runs (docs/operations.md, "Reverse proxy and slow
clients"; tests/backend/test_edge_budgets.py, test_query_budget.py, test_auth_hardening.py show each budget
alone). In order, the first N of:

  slow-datasets   10 dataset uploads at once (``PUT /projects/{id}/datasets/...``, 100 MB declared), each
                  sending 1 KiB a second, far below the minimum body rate (32 KiB/s past 10 s): expected
                  408 for those the API takes (4 per credential in each API process), 429 for the rest
                  (behind nginx, 2 of them already from nginx: 8 transfers per address);
  slow-artifacts  the same through a run token of the member's own claimed run (``PUT /runs/{id}/artifacts/
                  checkpoints/...``): 408 and 429;
  costly-queries  ``GET /runs?q=...`` two at a time, back to back: a query at the cost bound (16 lookups of
                  metrics, results and tags, 128 tests) that runs, and one a lookup past it (a 422 before
                  it runs); a statement past the statement timeout would be a 503;
  slow-bodies     3 metric bodies at once of 64 MiB declared (``POST /runs/{id}/metrics``), 1 KiB a
                  second: without the proxy the API holds one credential's 64 MiB (a 408 at the minimum
                  rate) and refuses the others with 503; behind nginx the proxy buffers them (it has no
                  minimum rate, only 10 s between two reads), the API never sees them and the client gives
                  up after ``HOLD`` s;
  guessing        wrong passwords for another member's account, 2 a second, each from the next of 64
                  loopback addresses (127.0.4.1-64, bound as the connection's source: behind nginx the API
                  learns them from X-Forwarded-For, which nginx sets to the connection's address): 401
                  until the throttle slows the pairs and the account's unknown addresses, then 429.

Every misbehaver sends from its own loopback address (127.0.3.k) to the load test's own API (or proxy) on
127.0.0.1; its traffic is bounded in count (the slots above) and rate (the pauses below), and ends with the
test. Outcomes are counted per misbehaver by status ("HTTP 408"), or as "no answer, closed by the client"
/ "closed without an answer" / the connection error."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench._common import PYTHON, ROOT
from bench.load.generator import KEYS, sleep_until

KINDS = ("slow-datasets", "slow-artifacts", "costly-queries", "slow-bodies", "guessing")
HOLD = 60.0  # seconds a slow request is kept open without an answer before the client gives up
PIECE = 1024  # bytes sent every TRICKLE seconds by a slow body: 1 KiB/s, the API's minimum is 32 KiB/s
TRICKLE = 1.0
PAUSE = 2.0  # seconds before a slot sends its next request, after an answer or a give-up
UPLOAD_SLOTS = (
    10  # slow uploads at once per uploader: past the API's 4 per credential and nginx's 8 per address
)
GUESS_ADDRESSES = 64
GUESS_EVERY = 0.5  # one wrong password every 0.5 s, from the next address
ANSWER_TIMEOUT = 60.0

_MEMBERS = """
import json, secrets
from backend.auth import service as auth_service
from backend.auth.security import use_settings_cost
from backend.db import get_engine, session_factory, session_scope
from backend.projects import service as projects
from backend.settings import Settings
s = Settings()
use_settings_cost(s)
out = {"members": []}
with session_scope(session_factory(get_engine(s.database_url))) as session:
    project = projects.get_or_create_project(session, "default")
    for name in %r:
        user = projects.create_member(session, name, secrets.token_urlsafe(18), project="default")
        out["members"].append({"username": name, "token": auth_service.create_token(session, user, "load")[1]})
    projects.create_member(session, %r, secrets.token_urlsafe(18), project="default")
    out["project_id"] = project.id
print(json.dumps(out))
"""
VICTIM = "victim"


@dataclass
class Misbehaver:
    kind: str
    username: str
    token: str
    source: str  # the loopback address it sends from (the guesser: the first of its addresses)
    outcomes: collections.Counter[str] = field(default_factory=collections.Counter)
    answered: list[float] = field(default_factory=list)  # seconds from the request to its status line
    run_token: str = ""
    run_path: str = ""  # /api/v1/runs/{id}
    attempt: int = 0

    @property
    def requests(self) -> int:
        return sum(self.outcomes.values())


def create_members(env: dict[str, str], n: int) -> tuple[list[Misbehaver], int]:
    """N members of the default project with an API token each, and the account the guesser targets."""
    names = [f"misbehave-{i + 1}-{KINDS[i]}" for i in range(n)]
    out = subprocess.run(
        [PYTHON, "-c", _MEMBERS % (names, VICTIM)], env=env, cwd=ROOT, capture_output=True, text=True
    )
    if out.returncode != 0:
        raise RuntimeError(f"creating the misbehaving members failed:\n{out.stderr[-3000:]}")
    data = json.loads(out.stdout.strip().splitlines()[-1])
    members = [
        Misbehaver(KINDS[i], m["username"], m["token"], f"127.0.3.{i + 1}")
        for i, m in enumerate(data["members"])
    ]
    return members, int(data["project_id"])


async def prepare(members: list[Misbehaver], base: str, worker_token: str) -> None:
    """A claimed run of their own for the members that need one (its run token for the artifacts)."""
    for m in members:
        if m.kind not in ("slow-artifacts", "slow-bodies"):
            continue
        async with httpx.AsyncClient(base_url=base + "/api/v1", timeout=60) as c:
            body = {"name": f"{m.username}'s run", "kind": "diagnostic", "spec": {}}
            r = await c.post("/experiments", json=body, headers={"Authorization": f"Bearer {m.token}"})
            r.raise_for_status()
            run = r.json()["runs"][0]
            r = await c.post(
                f"/runs/{run['id']}/claim",
                json={"attempt": run["attempt"], "worker": f"{m.username}@bench"},
                headers={"Authorization": f"Bearer {worker_token}"},
            )
            r.raise_for_status()
            m.run_token = r.json()["run_token"]
            m.run_path = f"/api/v1/runs/{run['id']}"
            m.attempt = r.json()["attempt"]


async def _status_line(reader: asyncio.StreamReader) -> str:
    """The answer's status, "HTTP 408"; "HTTP 429 from nginx" when its body is not the API's JSON (the
    proxy's own answer: a limit of docker/nginx/reasonlab.conf)."""
    line = await reader.readline()
    if not line:
        return "closed without an answer"
    parts = line.split()
    if len(parts) < 2 or not parts[1].isdigit():
        return "bad status line"
    json_body = False
    while True:
        header = await reader.readline()
        if header in (b"\r\n", b"\n", b""):
            break
        name, _, value = header.decode("latin-1").partition(":")
        if name.strip().lower() == "content-type":
            json_body = "json" in value.lower()
    return f"HTTP {int(parts[1])}" + ("" if json_body else " from nginx")


async def slow_request(
    m: Misbehaver, host: str, port: int, head: str, length: int, end: float, source: str
) -> None:
    """One request whose body (``length`` declared) trickles PIECE bytes every TRICKLE s until the server
    answers or closes, HOLD s pass, or the test ends."""
    t0 = time.monotonic()
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, local_addr=(source, 0)), 30
        )
    except (OSError, TimeoutError) as exc:
        m.outcomes[f"connect: {type(exc).__name__}"] += 1
        return
    status = asyncio.ensure_future(_status_line(reader))
    outcome = ""
    try:
        writer.write((head + f"Content-Length: {length}\r\nConnection: close\r\n\r\n").encode())
        sent = 0
        while True:
            await asyncio.wait({status}, timeout=TRICKLE)  # never raises: a reset is read below
            if status.done():
                break
            now = time.monotonic()
            if now - t0 >= HOLD or now >= end:
                outcome = (
                    f"no answer in {HOLD:.0f} s, closed by the client" if now < end else "cut at the end"
                )
                break
            if sent + PIECE <= length:
                try:
                    writer.write(b"x" * PIECE)
                    await writer.drain()
                    sent += PIECE
                except OSError:  # the server answered and closed while this was sending
                    await asyncio.wait({status}, timeout=5)
                    if not status.done():
                        outcome = "reset while sending"
                    break
        if not outcome:
            try:
                outcome = status.result()
                m.answered.append(time.monotonic() - t0)
            except (OSError, ValueError) as exc:  # a reset, or a status line past the reader's limit
                outcome = f"reset: {type(exc).__name__}"
    finally:
        status.cancel()
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    m.outcomes[outcome] += 1


async def _slot(m: Misbehaver, host: str, port: int, make_head: Any, length: int, end: float) -> None:
    n = 0
    while time.monotonic() < end:
        await slow_request(m, host, port, make_head(n), length, end, m.source)
        n += 1
        if not await sleep_until(time.monotonic() + PAUSE, end):
            return


def _head(method: str, path: str, token: str, content_type: str) -> str:
    return (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: {content_type}\r\n"
    )


def costly_query(over: bool) -> str:
    """A ``GET /runs`` query at the cost bound (backend/query/cost.py: 16 lookups, 128 tests), or one lookup
    past it (a 422 before it runs)."""
    lookups = [f"metrics.{k} > 0.5" for k in KEYS] + [
        f"results.{r} >= 0" for r in ("final_loss", "test_acc", "test_loss", "total_score", "ood_acc")
    ]
    lookups += ["tags = 'load'", "tags = 'slow'", "tags = 'x'"]
    lookups = lookups[:16] + (["tags = 'over'"] if over else [])
    tests = " or ".join(
        f"params.train.lr in ({', '.join(str(j / 100) for j in range(7))})" for _ in range(16)
    )
    return f"({' or '.join(lookups)}) and ({tests})"


async def _queries(m: Misbehaver, base: str, end: float) -> None:
    transport = httpx.AsyncHTTPTransport(local_address=m.source)
    async with httpx.AsyncClient(
        base_url=base + "/api/v1",
        transport=transport,
        headers={"Authorization": f"Bearer {m.token}"},
        timeout=ANSWER_TIMEOUT,
    ) as c:
        i = 0
        while time.monotonic() < end:
            q = costly_query(over=i % 2 == 1)
            i += 1
            t0 = time.monotonic()
            try:
                r = await c.get("/runs", params={"q": q, "limit": 100})
                m.outcomes[f"HTTP {r.status_code}"] += 1
                m.answered.append(time.monotonic() - t0)
            except httpx.HTTPError as exc:
                m.outcomes[type(exc).__name__] += 1
                await asyncio.sleep(PAUSE)
            if not await sleep_until(time.monotonic() + 0.1, end):
                return


async def _guess(m: Misbehaver, host: str, port: int, end: float) -> None:
    body = json.dumps({"username": VICTIM, "password": "not-the-password"}).encode()
    request = (
        f"POST /api/v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body
    i = 0
    nxt = time.monotonic()
    pending: set[asyncio.Future[None]] = set()

    async def one(source: str) -> None:
        t0 = time.monotonic()
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, local_addr=(source, 0)), 30
            )
        except (OSError, TimeoutError) as exc:
            m.outcomes[f"connect: {type(exc).__name__}"] += 1
            return
        try:
            writer.write(request)
            outcome = await asyncio.wait_for(_status_line(reader), ANSWER_TIMEOUT)
            m.answered.append(time.monotonic() - t0)
        except (OSError, TimeoutError, ValueError) as exc:
            outcome = type(exc).__name__
        finally:
            writer.close()
        m.outcomes[outcome] += 1

    while await sleep_until(nxt, end):
        if len(pending) < 8:  # at most 8 guesses in flight: a slow answer does not pile up connections
            task = asyncio.ensure_future(one(f"127.0.4.{i % GUESS_ADDRESSES + 1}"))
            pending.add(task)
            task.add_done_callback(pending.discard)
            i += 1
        nxt += GUESS_EVERY
    if pending:
        await asyncio.wait(pending, timeout=ANSWER_TIMEOUT)


def tasks(members: list[Misbehaver], base: str, project_id: int, end: float) -> list[Any]:
    """The coroutines of every misbehaver, to run with the well-behaved load until ``end``."""
    host, port = base.removeprefix("http://").rsplit(":", 1)
    p = int(port)
    out: list[Any] = []
    for m in members:
        if m.kind == "slow-datasets":
            for s in range(UPLOAD_SLOTS):

                def head(n: int, s: int = s, m: Misbehaver = m) -> str:
                    path = f"/api/v1/projects/{project_id}/datasets/slow-{s}-{n}.jsonl"
                    return _head("PUT", path, m.token, "application/octet-stream")

                out.append(_slot(m, host, p, head, 100_000_000, end))
        elif m.kind == "slow-artifacts":
            for s in range(UPLOAD_SLOTS):

                def head(n: int, s: int = s, m: Misbehaver = m) -> str:
                    path = f"{m.run_path}/artifacts/checkpoints/slow-{s}-{n}.pt?attempt={m.attempt}"
                    return _head("PUT", path, m.run_token, "application/octet-stream")

                out.append(_slot(m, host, p, head, 100_000_000, end))
        elif m.kind == "costly-queries":
            out += [_queries(m, base, end) for _ in range(2)]
        elif m.kind == "slow-bodies":
            for _ in range(3):

                def head(n: int, m: Misbehaver = m) -> str:
                    return _head("POST", f"{m.run_path}/metrics", m.token, "application/json")

                out.append(_slot(m, host, p, head, 64 * 1024 * 1024, end))
        elif m.kind == "guessing":
            m.source = f"127.0.4.1-{GUESS_ADDRESSES}"
            out.append(_guess(m, host, p, end))
    return out


def describe(m: Misbehaver) -> str:
    return {
        "slow-datasets": f"{UPLOAD_SLOTS} dataset uploads at once, 100 MB declared, 1 KiB/s",
        "slow-artifacts": f"{UPLOAD_SLOTS} artifact uploads at once through a run token, 100 MB declared, 1 KiB/s",
        "costly-queries": "GET /runs?q= at the cost bound and one lookup past it, 2 at a time",
        "slow-bodies": "3 metric bodies at once, 64 MiB declared, 1 KiB/s",
        "guessing": f"wrong passwords for {VICTIM!r}, 2/s, from {GUESS_ADDRESSES} addresses",
    }[m.kind]
