"""Slow clients: 25 anonymous connections that start a login with a large
Content-Length and send a few bytes held the 20 admission slots (their bodies were read inside them, with
no deadline) and every other request waited. Now a body is read within a deadline before the request
takes a slot, and one that does not arrive in time is a 408 with the connection closed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from unittest.mock import MagicMock

import pytest
import uvicorn

from backend.auth.dependencies import credential_check
from backend.bootstrap import ensure_admin, migrate
from backend.http.limits import RequestLimits
from backend.main import create_app
from backend.settings import Settings
from tests.backend.conftest import WORKER_TOKEN, make_settings

BODY_TIMEOUT = 4.0  # the test's deadline (the default is 10 s): room for a loaded machine to answer first


@dataclass
class Live:
    port: int
    settings: Settings
    admin_password: str
    app: Any

    def connect(self, timeout: float = 30) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)


@contextlib.contextmanager
def serve(settings: Settings, **uvicorn_options: Any) -> Iterator[Live]:
    """The API on a real uvicorn server on 127.0.0.1 (an ephemeral port), in a thread."""
    migrate(settings)
    creds = ensure_admin(settings)
    assert creds is not None
    app = create_app(settings, background=False)
    options: dict[str, Any] = {"lifespan": "off", "log_level": "warning", **uvicorn_options}
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, **options))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield Live(server.servers[0].sockets[0].getsockname()[1], settings, creds.password, app)
    finally:
        server.should_exit = True
        thread.join(timeout=15)


@pytest.fixture
def live(tmp_path: Path, home: Path) -> Iterator[Live]:
    settings = make_settings(f"sqlite:///{tmp_path / 'edge.db'}", home, request_body_timeout=BODY_TIMEOUT)
    with serve(settings) as server:
        yield server


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], Any]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed without an answer: {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return status, headers, json.loads(rest[:length]) if length else None


def request(
    live: Live, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> Any:
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    for name, value in (headers or {}).items():
        head += f"{name}: {value}\r\n"
    if body:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    with live.connect() as sock:
        sock.sendall(head.encode() + b"\r\n" + body)
        return read_response(sock)


def _start_slow_login(live: Live) -> socket.socket:
    """What the probe did: a login with a large Content-Length, then a few bytes, then nothing."""
    sock = live.connect()
    sock.sendall(
        b"POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b'Content-Length: 60000\r\n\r\n{"username": "adm'
    )
    return sock


def _answered(sock: socket.socket) -> bool:
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable)


@pytest.mark.heavy
def test_slow_bodies_do_not_take_the_admission_slots_and_get_408(live: Live) -> None:
    slots = live.settings.max_requests_in_flight
    slow = [_start_slow_login(live) for _ in range(slots + 5)]
    started = time.monotonic()
    try:
        time.sleep(0.5)  # every slow request is inside the application, waiting for its body
        # a normal request is answered while every slow one is still open and unanswered
        status, _, body = request(live, "GET", "/api/v1/health")
        assert status == 200, body
        login = json.dumps({"username": "admin", "password": live.admin_password}).encode()
        status, _, body = request(live, "POST", "/api/v1/auth/login", login)
        assert status == 200, body
        assert not any(_answered(s) for s in slow), "a slow request was answered before its deadline"
        # then each slow one gets a 408, no sooner than the deadline, and its connection is closed
        for sock in slow:
            status, headers, body = read_response(sock)
            assert status == 408 and body["code"] == "timeout", body
            assert headers["connection"] == "close"
            assert sock.recv(1) == b"", "the server kept the connection open"
        assert time.monotonic() - started >= BODY_TIMEOUT - 0.5
    finally:
        for sock in slow:
            sock.close()


@pytest.mark.heavy
def test_a_body_that_arrives_in_time_is_served_and_a_slow_one_is_cut(live: Live) -> None:
    """A login whose body comes in pieces, within the deadline, is served; a body still incomplete at
    the deadline is a 408 however often bytes trickle in (the deadline is for the whole body)."""
    login = json.dumps({"username": "admin", "password": live.admin_password}).encode()
    with live.connect() as sock:
        sock.sendall(
            b"POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(login)}\r\n\r\n".encode()
        )
        for i in range(0, len(login), 8):
            sock.sendall(login[i : i + 8])
            time.sleep(0.05)
        status, _, body = read_response(sock)
    assert status == 200, body
    with live.connect() as sock:
        sock.sendall(
            b"POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 60000\r\n\r\n"
        )
        started = time.monotonic()
        answer: list[Any] = []
        reader = threading.Thread(target=lambda: answer.append(read_response(sock)), daemon=True)
        reader.start()
        with contextlib.suppress(OSError):  # the server closes the connection at its deadline
            while reader.is_alive() and time.monotonic() - started < 30:
                sock.sendall(b" ")  # a byte every 0.2 s: never enough to finish
                time.sleep(0.2)
        reader.join(timeout=30)
    assert answer and answer[0][0] == 408, answer
    assert time.monotonic() - started >= BODY_TIMEOUT - 0.5


# -- the middleware alone: read ahead of the application, and a deadline for streamed bodies -------------


def _scope(method: str, path: str, headers: dict[str, str]) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }


def _limits(app: Any, tmp_path: Path, **settings: Any) -> RequestLimits:
    values: dict[str, Any] = {"home": tmp_path, "worker_token": WORKER_TOKEN, **settings}
    # the worker token resolves without a query: the session is never used, only closed
    limits = Settings(**values)
    return RequestLimits(app, settings=limits, authenticate=credential_check(limits, cast(Any, MagicMock)))


def _run(
    limited: RequestLimits, scope: dict[str, Any], pieces: list[bytes | None], log: list[str] | None = None
) -> dict[str, Any]:
    """Feed ``pieces`` as the body (``None``: the client stops sending); what the client got back.
    ``log`` gets a line for each piece the server took from the client."""

    async def main() -> dict[str, Any]:
        queue = list(pieces)
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            if not queue or queue[0] is None:
                await asyncio.Event().wait()  # the body never comes
            piece = queue.pop(0)
            assert piece is not None
            await asyncio.sleep(0.01)
            if log is not None:
                log.append(f"sent {len(piece)}")
            return {"type": "http.request", "body": piece, "more_body": bool(queue)}

        async def send(message: Any) -> None:
            sent.append(message)

        await asyncio.wait_for(limited(scope, receive, send), timeout=20)
        start = next(m for m in sent if m["type"] == "http.response.start")
        body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        return {"status": start["status"], "headers": dict(start["headers"]), "body": body}

    return asyncio.run(main())


def _echo_app(calls: list[str]) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        calls.append("called")
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            calls.append(f"read {len(message.get('body', b''))}")
            if not message.get("more_body", False):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})

    return app


def test_a_body_is_read_whole_before_the_application_is_called(tmp_path: Path) -> None:
    calls: list[str] = []
    limited = _limits(_echo_app(calls), tmp_path)
    scope = _scope("POST", "/api/v1/auth/login", {"content-length": "9"})
    answer = _run(limited, scope, [b"abc", b"def", b"ghi"], calls)
    assert answer["status"] == 200 and answer["body"] == b"abcdefghi"
    # the whole body taken from the client first, then the application called, the body replayed as sent
    assert calls == ["sent 3"] * 3 + ["called"] + ["read 3"] * 3


def test_a_streamed_body_has_the_deadline_too(tmp_path: Path) -> None:
    """An artifact upload is not read ahead (it may be 256 GiB): its route reads it, inside its slot,
    under the same deadline."""
    calls: list[str] = []
    limited = _limits(_echo_app(calls), tmp_path, request_body_timeout=0.5)
    headers = {"content-length": "1000000", "authorization": f"Bearer {WORKER_TOKEN}"}
    scope = _scope("PUT", "/api/v1/runs/1/artifacts/checkpoints/step-1.pt", headers)
    started = time.monotonic()
    answer = _run(limited, scope, [b"x" * 1000, None], calls)
    assert answer["status"] == 408 and json.loads(answer["body"])["code"] == "timeout"
    assert answer["headers"][b"connection"] == b"close"
    # the route itself was reading (not read ahead) when the deadline came
    assert calls == ["called", "sent 1000", "read 1000"]
    assert time.monotonic() - started >= 0.4


def test_the_deadline_grows_with_the_bytes_received(tmp_path: Path) -> None:
    """Past the base deadline a large body must keep up request_body_min_rate bytes a second: a second
    more per min_rate bytes received."""
    calls: list[str] = []
    limited = _limits(_echo_app(calls), tmp_path, request_body_timeout=0.2, request_body_min_rate=1000)
    scope = _scope("POST", "/api/v1/auth/login", {"content-length": "3000"})
    # 30 pieces of 100 bytes, 10 ms apart (~0.3 s in all, past 0.2 s): each earns 0.1 s
    assert _run(limited, scope, [b"x" * 100] * 30)["status"] == 200
    limited = _limits(_echo_app(calls), tmp_path, request_body_timeout=0.2, request_body_min_rate=10**9)
    assert _run(limited, scope, [b"x" * 100] * 30)["status"] == 408  # the same body, earning nothing
