"""One member's script must not stall, exhaust or drain the API.

Found by a probe: 22 slow dataset uploads (``Content-Length: 100000000`` at 64 KiB a second) held the 20
admission slots (a streamed body was read inside its slot) and another user's ``GET /runs/4`` timed out;
run tokens could do the same through artifact uploads; 8 slow 64 MiB metric bodies raised the API's memory
by 61 MB each, with no overall bound. Now (backend/http/limits.py, admission.py, transfers.py) a body must
keep up a minimum rate or get a 408, a streamed upload gives its slot back while it waits for its bytes,
one credential sends at most a few uploads at once (a 429 past them), and the bytes buffered across
requests are capped (a 503 with Retry-After, never an out-of-memory process).

The API runs as a real uvicorn process on 127.0.0.1 (its memory is measured); everything else is raw
sockets on loopback. No test asserts a duration: a slow client is one that sends less than the minimum
rate, and "while the uploads are in progress" is checked by their sockets having no answer yet."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from backend.auth import service as auth_service
from backend.bootstrap import ensure_admin, migrate
from backend.db import get_engine, session_factory, session_scope
from backend.http.limits import RequestLimits
from backend.projects import service as projects
from backend.settings import Settings
from tests.backend.conftest import USER_PASSWORD, WORKER_TOKEN, make_settings

MiB = 1024 * 1024


@dataclass
class LiveApi:
    port: int
    proc: subprocess.Popen[bytes]
    admin: str
    member: str  # writes: datasets, and a run's metrics through its run token
    other: str  # another member of the project, who reads while the member misbehaves
    project_id: int
    log: Path

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=30)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def rss(self) -> int:
        """The API process's resident memory, bytes."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")


@contextlib.contextmanager
def live_api(tmp_path: Path, **overrides: Any) -> Iterator[LiveApi]:
    """``uvicorn backend.main:create_app`` on an ephemeral loopback port with ``overrides`` as REASONLAB_
    settings, on a SQLite database of its own, with an admin, a member and another member."""
    home = tmp_path / "home"
    url = f"sqlite:///{tmp_path / 'budgets.db'}"
    settings = make_settings(url, home)
    migrate(settings)
    creds = ensure_admin(settings)
    assert creds is not None
    factory = session_factory(get_engine(url))
    with session_scope(factory) as session:
        project = projects.get_or_create_project(session, "default")
        tokens = []
        for name in ("mallory", "olivia"):
            user = projects.create_member(session, name, USER_PASSWORD, project="default", role="member")
            tokens.append(auth_service.create_token(session, user, "test")[1])
        project_id = project.id
    get_engine(url).dispose()
    get_engine.cache_clear()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    env = {k: v for k, v in os.environ.items() if not k.startswith("REASONLAB_")}
    env.update(
        {
            "REASONLAB_HOME": str(home),
            "REASONLAB_DATABASE_URL": url,
            "REASONLAB_WORKER_TOKEN": WORKER_TOKEN,
            "REASONLAB_RUN_BACKGROUND_LOOPS": "false",
            "REASONLAB_MLFLOW_MIRROR": "false",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update({f"REASONLAB_{k.upper()}": str(v) for k, v in overrides.items()})
    log = tmp_path / "api.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "uvicorn", "backend.main:create_app", "--factory"),
                *("--host", "127.0.0.1", "--port", str(port), "--log-level", "warning", "--no-proxy-headers"),
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    api = LiveApi(port, proc, creds.token, tokens[0], tokens[1], project_id, log)
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, f"the API exited: {log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"the API did not start: {log.read_text()[-3000:]}"
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(api.url("/api/v1/health"), timeout=2).status_code == 200:
                    break
            time.sleep(0.2)
        yield api
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _running_run(api: LiveApi) -> tuple[int, str]:
    """A run of the member's, claimed by the worker: (its id, its run token)."""
    body = {"name": "budgets", "kind": "diagnostic", "spec": {}}
    r = httpx.post(api.url("/api/v1/experiments"), json=body, headers=_bearer(api.member), timeout=30)
    assert r.status_code in (200, 201), r.text
    run_id = r.json()["runs"][0]["id"]
    claim = {"attempt": 1, "worker": "w"}
    r = httpx.post(
        api.url(f"/api/v1/runs/{run_id}/claim"), json=claim, headers=_bearer(WORKER_TOKEN), timeout=30
    )
    assert r.status_code == 200, r.text
    return run_id, r.json()["run_token"]


def _start(
    api: LiveApi, method: str, path: str, token: str, headers: dict[str, str], body: bytes = b""
) -> socket.socket:
    """A request whose head (and ``body``, the start of its body) is sent; the rest is the caller's."""
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    sock = api.connect()
    sock.sendall(head.encode() + b"\r\n" + body)
    return sock


def _answered(sock: socket.socket) -> bool:
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable)


def _status(sock: socket.socket) -> tuple[int, dict[str, str], Any]:
    """The answer on ``sock``: status, headers, JSON body (0 and {} where the server reset the
    connection without one)."""
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return 0, {}, None
            data += chunk
    except (ConnectionResetError, TimeoutError):
        return 0, {}, None
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    with contextlib.suppress(OSError):
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
    return int(lines[0].split()[1]), headers, json.loads(rest[:length]) if length else None


class Trickle:
    """Sends each socket ``piece`` bytes every ``every`` seconds until the server answers or closes it:
    a client slower than the minimum rate (or, with a larger piece, one that keeps it up)."""

    def __init__(self, socks: list[socket.socket], piece: int, every: float) -> None:
        self.socks, self.piece, self.every = socks, piece, every
        self.answered: set[int] = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        payload = b"x" * self.piece
        while not self.stop.is_set():
            for i, sock in enumerate(self.socks):
                if i in self.answered:
                    continue
                if _answered(sock):
                    self.answered.add(i)
                    continue
                try:
                    sock.sendall(payload)
                except OSError:
                    self.answered.add(i)
            if len(self.answered) == len(self.socks):
                return
            self.stop.wait(self.every)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        for sock in self.socks:
            sock.close()


@pytest.mark.heavy
def test_slow_uploads_hold_no_slot_and_are_cut_with_408(tmp_path: Path) -> None:
    """10 uploads (6 datasets by a member, 4 artifacts by a run token of theirs) sending 1 KiB every
    0.25 s, far below the 64 KiB a second they must keep up, with 4 admission slots: another member's
    reads are answered while every upload is still open and unanswered, and then each upload is a 408."""
    with live_api(
        tmp_path,
        max_requests_in_flight=4,
        max_requests_in_flight_per_principal=4,
        max_uploads_per_principal=8,
        max_uploads_in_flight=32,
        request_body_timeout=10,
        request_body_min_rate=64 * 1024,
        request_body_rate_window=2,
    ) as api:
        run_id, run_token = _running_run(api)
        length = {"Content-Length": "100000000", "Content-Type": "application/octet-stream"}
        uploads = [
            _start(api, "PUT", f"/api/v1/projects/{api.project_id}/datasets/d{i}.jsonl", api.member, length)
            for i in range(6)
        ] + [
            _start(
                api,
                "PUT",
                f"/api/v1/runs/{run_id}/artifacts/checkpoints/s{i}.pt?attempt=1",
                run_token,
                length,
            )
            for i in range(4)
        ]
        trickle = Trickle(uploads, 1024, 0.25)
        try:
            time.sleep(1.0)  # every upload is in its route, copying its body
            with httpx.Client(headers=_bearer(api.other), timeout=60) as reader:
                for _ in range(5):
                    r = reader.get(api.url(f"/api/v1/runs/{run_id}"))
                    assert r.status_code == 200, r.text
                    r = reader.get(api.url("/api/v1/runs"), params={"limit": 10})
                    assert r.status_code == 200, r.text
            assert not trickle.answered and not any(_answered(s) for s in uploads), (
                "an upload was answered before the reads: the reads waited for the uploads' slots"
            )
            trickle.thread.join(timeout=60)
            answers = [_status(s) for s in uploads]
        finally:
            trickle.close()
        assert [a[0] for a in answers] == [408] * len(uploads), answers
        assert all(a[2]["code"] == "timeout" for a in answers), answers
        # nothing of the cut uploads was kept
        r = httpx.get(api.url(f"/api/v1/projects/{api.project_id}/datasets"), headers=_bearer(api.other))
        assert r.status_code == 200 and r.json() == [], r.text


@pytest.mark.heavy
def test_one_credential_sends_a_few_uploads_at_once_and_gets_429_past_them(tmp_path: Path) -> None:
    """The probe's case: uploads that keep up the rate (here 16 KiB every 0.1 s), 25 datasets from one
    member and 25 artifacts from one run token of theirs. Four of each go on (the default share), every
    further one is a 429 with Retry-After before a byte of its body is read; another member uploads and
    reads meanwhile."""
    with live_api(tmp_path, request_body_timeout=30) as api:
        run_id, run_token = _running_run(api)
        length = {"Content-Length": "100000000", "Content-Type": "application/octet-stream"}
        datasets = f"/api/v1/projects/{api.project_id}/datasets"
        artifacts = f"/api/v1/runs/{run_id}/artifacts/checkpoints"

        def upload(i: int, credential: str) -> socket.socket:
            if credential == api.member:
                return _start(api, "PUT", f"{datasets}/d{i}.jsonl", credential, length)
            return _start(api, "PUT", f"{artifacts}/s{i}.pt?attempt=1", credential, length)

        first = [upload(i, who) for who in (api.member, run_token) for i in range(4)]
        trickle = Trickle(first, 16 * 1024, 0.1)
        try:
            time.sleep(1.0)  # the eight are in their routes
            for who in (api.member, run_token):
                more = [upload(i, who) for i in range(4, 25)]
                refused = [_status(s) for s in more]
                for sock in more:
                    sock.close()
                assert [a[0] for a in refused] == [429] * 21, [a[:2] for a in refused]
                assert all(
                    int(a[1]["retry-after"]) > 0 and a[2]["code"] == "too_many_uploads" for a in refused
                )
            # another member: their own uploads and reads go on
            with httpx.Client(headers=_bearer(api.other), timeout=60) as other:
                r = other.put(api.url(f"{datasets}/mine.jsonl"), content=b'{"q": 1}\n')
                assert r.status_code == 200, r.text
                assert other.get(api.url(datasets)).status_code == 200
                assert other.get(api.url(f"/api/v1/runs/{run_id}")).status_code == 200
            assert not trickle.answered, "a rate-keeping upload was cut"
        finally:
            trickle.close()


@pytest.mark.heavy
def test_buffered_bodies_are_capped_and_memory_stays_bounded(tmp_path: Path) -> None:
    """Metric bodies, read whole before their route: 20 chunked ones of a run token that each send 8 MiB
    and then stall (160 MiB if all were held), and declared ones of a member past their share. At most
    the caps are held (16 MiB a credential here): the rest are refused with a 503 and Retry-After (or the
    connection closed mid-body), and the API's memory grows by far less than the bodies sent."""
    with live_api(
        tmp_path,
        max_buffered_bytes=64 * MiB,
        max_buffered_bytes_per_principal=16 * MiB,
        request_body_timeout=60,
        request_body_min_rate=1024,
        request_body_rate_window=60,
    ) as api:
        run_id, run_token = _running_run(api)
        metrics = f"/api/v1/runs/{run_id}/metrics"
        for _ in range(20):  # the process warmed up: its memory settled before the baseline
            assert httpx.get(api.url("/api/v1/health")).status_code == 200
        baseline = api.rss()

        chunked = {"Transfer-Encoding": "chunked", "Content-Type": "application/json"}
        piece = b"%x\r\n%s\r\n" % (256 * 1024, b" " * (256 * 1024))
        socks = [_start(api, "POST", metrics, run_token, chunked) for _ in range(20)]
        refused = 0
        for sock in socks:
            try:
                for _ in range(32):  # 8 MiB
                    sock.sendall(piece)
            except OSError:  # the API answered 503 and closed while this was sending
                refused += 1
        time.sleep(1.0)  # the API has taken what it was going to take
        grown = api.rss() - baseline
        answered = [_status(s) for s in socks if _answered(s)]
        assert grown < 80 * MiB, f"the API's memory grew by {grown / MiB:.0f} MiB for 160 MiB of bodies"
        assert refused + len(answered) >= 17, (refused, answered)  # at most two 8 MiB bodies held
        assert all(a[0] in (0, 503) for a in answered), answered
        assert any(a[0] == 503 for a in answered) or refused, answered

        # a declared length is counted before a byte of the body is read: one credential's share is
        # 16 MiB, so two 8 MiB bodies of the member's are held and the other eight refused at once
        declared = {"Content-Length": str(8 * MiB), "Content-Type": "application/json"}
        members = [_start(api, "POST", metrics, api.member, declared) for _ in range(10)]
        answers = []
        for sock in members:
            sock.settimeout(3)
            answers.append(_status(sock))
        held = [a for a in answers if a[0] == 0]
        busy = [a for a in answers if a[0] == 503]
        assert len(held) == 2 and len(busy) == 8, [a[:2] for a in answers]
        assert all(int(a[1]["retry-after"]) > 0 and a[2]["code"] == "busy" for a in busy)
        # a body larger than a cap could never be taken: a 413 at once
        huge = _start(api, "POST", metrics, api.other, {"Content-Length": str(32 * MiB)})
        status, _, body = _status(huge)
        assert status == 413, body
        # another member's small write is served meanwhile (the process cap is not full)
        r = httpx.post(
            api.url(metrics), json={"attempt": 1, "points": []}, headers=_bearer(api.other), timeout=30
        )
        assert r.status_code != 503, r.text
        for sock in [*socks, *members, huge]:
            sock.close()


# -- the middleware alone: the rate's window and the process-wide cap -------------------------------------


def _middleware(app: Any, tmp_path: Path, **settings: Any) -> RequestLimits:
    values: dict[str, Any] = {"home": tmp_path, "worker_token": WORKER_TOKEN, **settings}
    return RequestLimits(
        app, settings=Settings(**values), authenticate=lambda credential: None, identify=lambda c: c
    )


def _http(method: str, path: str, headers: dict[str, str]) -> dict[str, Any]:
    return {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }


async def _serve(
    limited: RequestLimits, scope: dict[str, Any], pieces: list[bytes | None], timeout: float = 10
) -> tuple[int, dict[bytes, bytes], dict[str, Any]]:
    """Feed ``pieces`` (``None``: the client stops sending) and return the answer (status, headers, body),
    within the test's ``timeout``."""
    queue = list(pieces)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if not queue or queue[0] is None:
            await asyncio.Event().wait()
        piece = queue.pop(0)
        assert piece is not None
        await asyncio.sleep(0.01)
        return {"type": "http.request", "body": piece, "more_body": bool(queue)}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await asyncio.wait_for(limited(scope, receive, send), timeout=timeout)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], dict(start["headers"]), json.loads(body) if body else {}


async def _drain_app(scope: Any, receive: Any, send: Any) -> None:
    while (await receive()).get("more_body", False):
        pass
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


def test_a_body_ahead_of_its_rate_earns_a_window_of_slack_not_more(tmp_path: Path) -> None:
    """1 MB sent at once earns 1,000 s at 1,000 bytes a second; the credit stops at the window (0.5 s),
    so the client that then stops sending is cut with a 408 well within the test's timeout (it used
    to be held for those 1,000 s)."""
    limited = _middleware(
        _drain_app,
        tmp_path,
        request_body_timeout=0.2,
        request_body_min_rate=1000,
        request_body_rate_window=0.5,
    )
    scope = _http(
        "POST", "/api/v1/runs/1/metrics", {"content-length": "2000000", "authorization": "Bearer a"}
    )
    status, headers, body = asyncio.run(_serve(limited, scope, [b"x" * 100_000] * 10 + [None], timeout=10))
    assert status == 408 and body["code"] == "timeout", body
    assert headers[b"connection"] == b"close"
    # a body that keeps its rate is served (each piece earns more than the wait for it)
    limited = _middleware(
        _drain_app,
        tmp_path,
        request_body_timeout=0.2,
        request_body_min_rate=1000,
        request_body_rate_window=0.5,
    )
    scope = _http("POST", "/api/v1/runs/1/metrics", {"content-length": "3000", "authorization": "Bearer a"})
    assert asyncio.run(_serve(limited, scope, [b"x" * 100] * 30))[0] == 200


def test_the_process_cap_counts_every_credential_and_frees_with_the_answer(tmp_path: Path) -> None:
    """Two credentials, each within its own share, together over the process's cap: the second is a 503
    with Retry-After while the first is in its route; once the first has its answer, the second is
    served."""
    release = None

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body", False):
            pass
        if release is not None and dict(scope["headers"])[b"authorization"] == b"Bearer a":
            await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    limited = _middleware(
        app, tmp_path, max_buffered_bytes=1024 * 1024, max_buffered_bytes_per_principal=1024 * 1024
    )

    def scope(who: str) -> dict[str, Any]:
        return _http(
            "POST",
            "/api/v1/runs/1/metrics",
            {"content-length": str(600_000), "authorization": f"Bearer {who}"},
        )

    async def main() -> None:
        nonlocal release
        release = asyncio.Event()
        first = asyncio.create_task(_serve(limited, scope("a"), [b"x" * 600_000]))
        while limited.budgets.buffered == 0:
            await asyncio.sleep(0.01)
        status, headers, body = await _serve(limited, scope("b"), [b"x" * 600_000])
        assert status == 503 and body["code"] == "busy", body
        assert int(headers[b"retry-after"]) > 0
        release.set()
        assert (await first)[0] == 200
        assert limited.budgets.buffered == 0 and not limited.budgets.buffered_by
        assert (await _serve(limited, scope("b"), [b"x" * 600_000]))[0] == 200

    asyncio.run(main())


@pytest.mark.heavy
def test_an_upload_abandoned_mid_body_stores_nothing_and_logs_no_traceback(tmp_path: Path) -> None:
    """A client that hangs up in the middle of a dataset or artifact body: its staged bytes are dropped, the
    API keeps answering, and its log holds no "Exception in ASGI application" traceback per hang-up."""
    with live_api(tmp_path) as api:
        run_id, run_token = _running_run(api)
        length = {"Content-Length": "1000000", "Content-Type": "application/octet-stream"}
        socks = [
            _start(
                api,
                "PUT",
                f"/api/v1/projects/{api.project_id}/datasets/gone{i}.jsonl",
                api.member,
                length,
                b"x" * 4096,
            )
            for i in range(3)
        ] + [
            _start(
                api,
                "PUT",
                f"/api/v1/runs/{run_id}/artifacts/checkpoints/gone{i}.pt?attempt=1",
                run_token,
                length,
                b"x" * 4096,
            )
            for i in range(3)
        ]
        time.sleep(1.0)  # each is in its route, copying its body
        for sock in socks:
            sock.close()
        r = httpx.get(api.url(f"/api/v1/projects/{api.project_id}/datasets"), headers=_bearer(api.other))
        # the API notices each hang-up at its next read of the body (at once: the socket is closed); an
        # unhandled one is in the log within this time
        deadline = time.monotonic() + 5
        while "Traceback" not in api.log.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert r.status_code == 200 and r.json() == [], r.text
        r = httpx.get(api.url(f"/api/v1/runs/{run_id}/artifacts"), headers=_bearer(api.member), timeout=30)
        assert r.status_code == 200 and not [a for a in r.json() if "gone" in str(a)], r.text
        log = api.log.read_text()
        assert "Exception in ASGI application" not in log and "Traceback" not in log, log[-4000:]
