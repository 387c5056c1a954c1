"""Tickets in the access log: the auth path reads ``ticket`` from the decoded query,
so ``?%74icket=`` opened a stream, while the log's redaction matched only the literal ``ticket=`` and
wrote the ticket out. The redaction now decodes each parameter's name and compares it without regard to
case: it covers every spelling the auth path accepts (the name ``ticket`` exactly, however encoded) and
more (``TICKET``, which the auth path refuses)."""

from __future__ import annotations

import itertools
import json
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from starlette.datastructures import QueryParams

from backend.http import logredact
from backend.http.logredact import redact
from tests.backend.conftest import WORKER_TOKEN, make_settings
from tests.backend.test_edge_slow_clients import Live, request, serve


def _spellings(name: str = "ticket") -> Iterator[str]:
    """``name`` with every subset of its characters percent-encoded, in lower- and upper-case hex."""
    for encoded in itertools.product((False, True), repeat=len(name)):
        for hex_case in (str.lower, str.upper):
            yield "".join(hex_case(f"%{ord(c):02x}") if e else c for c, e in zip(name, encoded, strict=True))


CASE_VARIANTS = ["TICKET", "Ticket", "tIcKeT", "%54ICKET", "%54%49%43%4B%45%54"]
OTHER = [
    "%2574icket",
    "tick%65t%20",
    "x-ticket",
    "x%3Bticket",
    "ticket%00",
    "api_key",
    "ACCESS_TOKEN",
    "Password",
]


def test_every_spelling_the_auth_path_accepts_is_redacted() -> None:
    accepted = 0
    for i, spelling in enumerate([*sorted(set(_spellings())), *CASE_VARIANTS, *OTHER]):
        secret = f"s3cret-value-{i}"
        query = f"a=1&{spelling}={secret}&b=2"
        line = f'127.0.0.1:1 - "GET /api/v1/runs/1/events?{query} HTTP/1.1" 200'
        assert secret not in redact(line), spelling
        assert "a=1&" in redact(line) and "&b=2" in redact(line)
        if QueryParams(query).get("ticket") == secret:  # what backend/auth/dependencies.py reads
            accepted += 1
    assert accepted == len(set(_spellings()))  # every encoding of the exact name, and no other
    assert QueryParams("TICKET=x").get("ticket") is None  # the auth path is case-sensitive


def test_a_value_hidden_in_an_encoded_name_and_tokens_anywhere_are_redacted() -> None:
    assert "s3cret" not in redact("/e?ticket%3Ds3cret")  # an '=' encoded into the name
    jwt_like = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"
    assert jwt_like not in redact(f"/api/v1/runs/1/{jwt_like}/x?q={jwt_like}")
    assert "rl_abcdefghijklmnopqrstuvwxyz" not in redact("/x?q=rl_abcdefghijklmnopqrstuvwxyz")
    # a report's share link is its token, in the path (GET /shared/reports/{token})
    shared = "rlshare_Zm9vYmFyYmF6cXV4LXF1dXg_0123456789"
    assert redact(f"/api/v1/shared/reports/{shared}") == "/api/v1/shared/reports/[redacted]"
    assert redact("/api/v1/runs?status=running&limit=50") == "/api/v1/runs?status=running&limit=50"


def test_a_worker_token_under_any_name_is_redacted() -> None:
    """A credential under a name with no secret word in it (``?x=``) stood in the log in clear: a
    generated worker token (``wk_...``) is redacted by its shape, a configured one by its value."""
    generated = "wk_" + "Ab3_-" * 9
    assert generated not in redact(f'"GET /api/v1/runs?x={generated}&limit=5 HTTP/1.1" 200')
    chosen = "operator-chose-this-worker-secret+1"
    logredact.remember([chosen, "short"])
    line = f"GET /api/v1/runs?x={chosen}&y={quote(chosen, safe='')}&z=short HTTP/1.1"
    assert chosen not in redact(line) and quote(chosen, safe="") not in redact(line)
    assert "z=short" in redact(line)  # a value too short to search for is not (it would redact words)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def logged(tmp_path: Path, home: Path) -> Iterator[tuple[Live, _Lines]]:
    """A real server with uvicorn's access log on; its lines (after the redaction filter) collected."""
    handler = _Lines()
    access = logging.getLogger("uvicorn.access")
    access.addHandler(handler)
    try:
        settings = make_settings(f"sqlite:///{tmp_path / 'edge.db'}", home)
        with serve(settings, log_config=None, log_level="info", access_log=True) as live:
            yield live, handler
    finally:
        access.removeHandler(handler)


def _ticket(live: Live) -> tuple[int, str]:
    login = json.dumps({"username": "admin", "password": live.admin_password}).encode()
    token = request(live, "POST", "/api/v1/auth/login", login)[2]["access_token"]
    auth = {"Authorization": f"Bearer {token}"}
    spec = json.dumps({"name": "e", "kind": "diagnostic", "spec": {}}).encode()
    status, _, body = request(live, "POST", "/api/v1/experiments", spec, auth)
    assert status == 201, body
    run_id = body["runs"][0]["id"]
    status, _, body = request(live, "POST", f"/api/v1/runs/{run_id}/read-ticket", b"", auth)
    assert status == 200, body
    return run_id, body["ticket"]


def _open_stream(live: Live, target: str) -> int:
    """The status of an event stream's answer; the stream is then dropped."""
    with live.connect(timeout=30) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".encode())
        data = b""
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            assert chunk, "no answer"
            data += chunk
        sock.shutdown(socket.SHUT_RDWR)
    return int(data.split(b" ", 2)[1])


def test_the_access_log_never_holds_a_ticket(logged: tuple[Live, _Lines]) -> None:
    live, log = logged
    run_id, ticket = _ticket(live)
    # the auth path takes the exact name however encoded: the stream opens, the download is looked up
    for spelling in ("ticket", "%74icket", "tick%65t", "%74%69%63%6B%65%74"):
        assert _open_stream(live, f"/api/v1/runs/{run_id}/events?{spelling}={ticket}") == 200, spelling
        status, _, body = request(
            live, "GET", f"/api/v1/runs/{run_id}/artifacts/checkpoints/no-such.pt?{spelling}={ticket}"
        )
        assert status == 404, (spelling, body)
    # other cases are not the parameter: no credential (and still not logged)
    for spelling in ("TICKET", "Ticket", "%54icket"):
        status, _, _ = request(
            live, "GET", f"/api/v1/runs/{run_id}/artifacts/checkpoints/no-such.pt?{spelling}={ticket}"
        )
        assert status == 401, spelling
    # a bad ticket is refused, and not logged either
    for spelling in ("%74icket", "TICKET"):
        status, _, _ = request(
            live, "GET", f"/api/v1/runs/{run_id}/events?{spelling}=not-a-ticket-but-secret"
        )
        assert status == 401
    lines = [line for line in log.lines if f"/runs/{run_id}/" in line]
    assert len(lines) >= 13, lines
    signature = ticket.rsplit(".", 1)[1]
    for line in lines:
        assert ticket not in line and signature not in line and "not-a-ticket-but-secret" not in line, line
    assert any("%74icket=[redacted]" in line for line in lines)
    # the worker token under a name the redaction does not know, through the real server's log
    request(live, "GET", f"/api/v1/runs/{run_id}?x={WORKER_TOKEN}")
    assert any(f"/runs/{run_id}?x=[redacted]" in line for line in log.lines), log.lines[-3:]
    assert not any(WORKER_TOKEN in line for line in log.lines)
