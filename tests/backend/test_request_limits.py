"""Request bodies: refused by size before they are read (by Content-Length, and by
the streamed size when there is none), and refused without a credential before they are read."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from backend.http import limits
from tests.backend.conftest import Api

MiB = 1024 * 1024


class Asgi:
    """One request straight into the ASGI app, with a client that sends its headers and then never a
    byte of its body: an answer can only come back if the server did not wait for the body."""

    def __init__(self, api: Api) -> None:
        self.app = api.client.app

    def call(self, method: str, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        return asyncio.run(self._call(method, path, headers))

    async def _call(self, method: str, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        reads = 0
        messages: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            nonlocal reads
            reads += 1
            await asyncio.Event().wait()  # the body never comes
            raise AssertionError("unreachable")

        async def send(message: dict[str, Any]) -> None:
            messages.append(message)

        scope = {
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
        await asyncio.wait_for(self.app(scope, receive, send), timeout=20)
        assert reads == 0, "the server read the body"
        start = next(m for m in messages if m["type"] == "http.response.start")
        body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
        head = {k.decode(): v.decode() for k, v in start["headers"]}
        return start["status"], head, json.loads(body) if body else None


JSON = {"content-type": "application/json"}


def _assert_error(body: Any, code: str) -> None:
    assert set(body) == {"detail", "code", "errors"} and body["code"] == code and body["errors"] == []


def test_a_declared_oversize_body_is_413_without_being_read(api: Api) -> None:
    asgi = Asgi(api)
    # anonymous, 300 MB: the probe's request
    status, head, body = asgi.call("POST", "/api/v1/experiments", {**JSON, "content-length": "300000000"})
    assert status == 413, body
    _assert_error(body, "too_large")
    assert head.get("connection") == "close"
    # authenticated, every class over its own limit
    for path, limit in (
        ("/api/v1/experiments", limits.DEFAULT_LIMIT),
        ("/api/v1/projects", limits.DEFAULT_LIMIT),
        ("/api/v1/runs/1/metrics", limits.METRICS_LIMIT),
        ("/api/v1/runs/1/logs", limits.WORKER_WRITE_LIMIT),
        ("/api/v1/runs/1/results", limits.WORKER_WRITE_LIMIT),
        ("/api/v1/runs/1/finish", limits.WORKER_WRITE_LIMIT),
        ("/api/v1/auth/login", limits.LOGIN_LIMIT),
        ("/api/v1/runs/1/artifacts/checkpoints/step-1.pt", limits.ARTIFACT_LIMIT),
    ):
        headers = {**JSON, **api.worker, "content-length": str(limit + 1)}
        status, _, body = asgi.call("POST", path, headers)
        assert status == 413, (path, body)
        assert any(
            f"{limit // unit} {name}" in body["detail"]
            for unit, name in ((1024 * MiB, "GiB"), (MiB, "MiB"), (1024, "KiB"))
        )


def test_a_body_without_a_valid_credential_is_401_without_being_read(api: Api) -> None:
    asgi = Asgi(api)
    small = {**JSON, "content-length": "100"}
    for headers in (
        small,
        {**small, "authorization": "Bearer nope"},
        {**small, "authorization": "Bearer rl_not_a_token_at_all"},
        {**small, "authorization": "Basic YWRtaW46YWRtaW4="},
        {**small, "authorization": "Bearer "},
    ):
        for path in ("/api/v1/experiments", "/api/v1/runs/1/metrics", "/api/v1/no-such-route"):
            status, head, body = asgi.call("POST", path, headers)
            assert status == 401, (headers, path, body)
            _assert_error(body, "unauthorized")
            assert head["www-authenticate"] == "Bearer"
    # chunked (no Content-Length) is a body too
    status, _, body = asgi.call("PUT", "/api/v1/projects/1/members", {**JSON, "transfer-encoding": "chunked"})
    assert status == 401, body


def test_login_and_bodiless_requests_are_not_refused_early(api: Api) -> None:
    r = api.client.post("/api/v1/auth/login", json={"username": "admin", "password": api.admin_password})
    assert r.status_code == 200, r.text
    assert api.client.get("/api/v1/health").status_code == 200
    assert api.client.get("/api/v1/experiments").status_code == 401  # the dependency, as before
    assert api.client.get("/api/v1/experiments", headers=api.h()).status_code == 200


def test_a_malformed_content_length_is_400(api: Api) -> None:
    status, _, body = Asgi(api).call(
        "POST", "/api/v1/experiments", {**JSON, **api.h(), "content-length": "12x"}
    )
    assert status == 400
    assert body["code"] == "bad_request"


def _chunks(total: int, size: int = 256 * 1024) -> Iterator[bytes]:
    yield b'{"name": "big", "kind": "diagnostic", "spec": {}, "description": "'
    sent = 0
    while sent < total:
        yield b"x" * size
        sent += size
    yield b'"}'


def test_a_streamed_body_over_the_limit_is_413_and_stores_nothing(api: Api) -> None:
    # a generator body goes out chunked: no Content-Length to judge it by
    r = api.client.post(
        "/api/v1/experiments", content=_chunks(limits.DEFAULT_LIMIT + MiB), headers={**JSON, **api.h()}
    )
    assert r.status_code == 413, r.text
    _assert_error(r.json(), "too_large")
    assert api.client.get("/api/v1/experiments", headers=api.h()).json()["items"] == []
    # under the limit the same route parses it (and validation answers: a description over 100,000)
    r = api.client.post("/api/v1/experiments", content=_chunks(200_000), headers={**JSON, **api.h()})
    assert r.status_code == 422, r.text


def test_limits_are_per_route_class(api: Api) -> None:
    run = api.submit({}).json()["runs"][0]
    # a metric batch padded (JSON whitespace) past the default limit still goes through its own class
    points = json.dumps({"points": [{"key": "loss", "step": 1, "value": 0.5}]}).encode()
    padded = points[:-1] + b" " * (limits.DEFAULT_LIMIT + MiB) + b"}"
    r = api.client.post(f"/api/v1/runs/{run['id']}/metrics", content=padded, headers={**JSON, **api.worker})
    assert r.status_code == 200, r.text[:300]
    # the same padding on a comment is over its class
    body = b'{"body": "hi"' + b" " * (limits.DEFAULT_LIMIT + MiB) + b"}"
    r = api.client.post(
        f"/api/v1/experiments/{run['experiment_id']}/comments", content=body, headers={**JSON, **api.h()}
    )
    assert r.status_code == 413


# -- a real server: the answer comes back while the client still holds (or never sends) the body ------


@pytest.fixture
def live_port(api: Api) -> Iterator[int]:
    config = uvicorn.Config(api.client.app, host="127.0.0.1", port=0, lifespan="off", log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    yield server.servers[0].sockets[0].getsockname()[1]
    server.should_exit = True
    thread.join(timeout=10)


def _read_response(sock: socket.socket) -> tuple[int, dict[str, str], Any]:
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


def test_a_real_server_answers_a_huge_declared_body_at_once(live_port: int) -> None:
    with socket.create_connection(("127.0.0.1", live_port), timeout=10) as sock:
        sock.sendall(
            b"POST /api/v1/experiments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 300000000\r\n\r\n{"name": '
        )
        started = time.monotonic()
        status, headers, body = _read_response(sock)
    assert status == 413 and body["code"] == "too_large"
    assert headers["connection"] == "close"
    assert time.monotonic() - started < 5


def test_a_real_server_answers_401_before_a_body_arrives(live_port: int) -> None:
    with socket.create_connection(("127.0.0.1", live_port), timeout=10) as sock:
        sock.sendall(
            b"POST /api/v1/experiments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000\r\n\r\n"
        )
        status, _, body = _read_response(sock)
    assert status == 401 and body["code"] == "unauthorized"


def test_a_real_server_cuts_a_chunked_body_at_the_limit(api: Api, live_port: int) -> None:
    """Chunks past the limit, and the body never ends: the 413 comes back anyway."""
    with socket.create_connection(("127.0.0.1", live_port), timeout=20) as sock:
        sock.sendall(
            b"POST /api/v1/experiments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + api.admin_token.encode() + b"\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )

        def send() -> None:
            chunk = b"x" * (64 * 1024)
            framed = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
            try:
                for _ in range(limits.DEFAULT_LIMIT // len(chunk) + 4):
                    sock.sendall(framed)
            except OSError:
                pass  # the server answered and closed: that is the point

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        status, headers, body = _read_response(sock)
        sender.join(timeout=10)
    assert status == 413 and body["code"] == "too_large"
    assert headers["connection"] == "close"
