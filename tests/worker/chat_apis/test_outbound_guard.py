"""The endpoint client's outbound guard (docs/spec-confinement.md): URLs are checked before any DNS lookup,
every address a host resolves to is checked before any connection, the connection goes to the checked
address only (DNS rebinding cannot swap it), redirects are never followed, and what a refusal or a failed
connection says does not tell whether something answers there.

Nothing here leaves loopback: DNS is a stub, ``socket.getaddrinfo`` and ``socket.create_connection`` raise
if anything calls them, and refused targets are given a socket opener that raises AssertionError, so a
broken refusal fails the test instead of connecting. The only real connections go to fake servers on
127.0.0.1, under the admin's explicit opt-in.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.skillmix_grader import STUDENT_REPLY, Script, serve
from worker.chat_apis.openai_chat import OpenAIChat
from worker.core.skillmix.chat import ChatFailure, Sampling, user
from worker.specs.confine import ALLOW_ENV, ALLOW_PRIVATE_ENV, OutboundPolicy, Refused, check_url

HOST = "grader.test"  # a test host name: only the stub resolvers below know it
SAMPLING = Sampling(0.7, 8)


@pytest.fixture(autouse=True)
def no_real_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> Any:
        raise AssertionError(f"a real DNS lookup or connection: {args}")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv(ALLOW_ENV, HOST)
    monkeypatch.delenv(ALLOW_PRIVATE_ENV, raising=False)


def never_connect(address: tuple[str, int], timeout: float) -> socket.socket:
    raise AssertionError(f"connected to {address}: the guard let a refused address through")


def resolving_to(*addresses: str, calls: list[str] | None = None) -> Callable[[str, int], list[str]]:
    def resolve(host: str, port: int) -> list[str]:
        if calls is not None:
            calls.append(host)
        assert host == HOST, f"resolved {host!r}"
        return list(addresses)

    return resolve


def chat(
    url: str, resolve: Callable[[str, int], list[str]], opener: Any = never_connect, **kw: Any
) -> OpenAIChat:
    return OpenAIChat(
        url=url, model="m", api_key="sk-test", backoff_s=0.0, resolve=resolve, open_socket=opener, **kw
    )


def ask(client: OpenAIChat) -> str:
    (reply,) = client.complete([[user("hi")]], [0], SAMPLING)
    assert isinstance(reply, ChatFailure), reply
    return reply.reason


# --- at validation: no DNS, no connection ---------------------------------------------------------------

REFUSED_LITERALS = [
    "http://127.0.0.1:6379/",
    "http://2130706433/",
    "http://0177.0.0.1/",
    "http://0x7f.1/",
    "http://127.1/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[0:0:0:0:0:0:0:1]/",
    "http://169.254.169.254/latest/meta-data/",
    "http://169.254.0.1/",
    "http://[fe80::1]/",
    "http://[fd00:ec2::254]/",
    "http://[64:ff9b::a9fe:a9fe]/",
    "http://[2002:a9fe:a9fe::]/",
    "http://10.0.0.1/",
    "http://172.31.255.255/",
    "http://192.168.0.1/",
    "http://100.64.0.1/",
    "http://[fc00::1]/",
    "http://0.0.0.0/",
    "http://0/",
    "http://[::]/",
    "http://224.0.0.1/",
    "http://255.255.255.255/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://metadata/",
    "http://localhost/",
    "http://foo.localhost/",
    "file:///etc/passwd",
    "gopher://grader.test/",
    "http://user@grader.test/",
    "http://elsewhere.test/",
]


@pytest.mark.parametrize("url", REFUSED_LITERALS)
def test_refused_at_validation_without_dns(url: str) -> None:
    with pytest.raises(Refused):
        check_url(url)


def test_the_opt_in_needs_the_address_listed_and_never_covers_metadata() -> None:
    loopback = "http://127.0.0.1:9/v1"
    with pytest.raises(Refused):  # listed, but no opt-in
        check_url(loopback, OutboundPolicy.parse("127.0.0.1"))
    with pytest.raises(Refused):  # opt-in, but not listed (a wildcard never covers private addresses)
        check_url(loopback, OutboundPolicy.parse("*,10.0.0.0/8", allow_private=True))
    assert check_url(loopback, OutboundPolicy.parse("127.0.0.1", allow_private=True)).port == 9
    for url in ("http://169.254.169.254/", "http://[fd00:ec2::254]/", "http://0.0.0.0/"):
        with pytest.raises(Refused):
            check_url(url, OutboundPolicy.parse("0.0.0.0/0,::/0,169.254.169.254", allow_private=True))
    with pytest.raises(Refused):
        check_url("http://metadata.google.internal/", OutboundPolicy.parse("*", allow_private=True))
    assert OutboundPolicy.parse("").allows_name("api.openai.com") is False  # empty: nothing at all


def test_wildcards_cover_names_below_not_beside() -> None:
    policy = OutboundPolicy.parse("*.corp.test")
    assert check_url("https://llm.corp.test/v1", policy).host == "llm.corp.test"
    for url in ("https://corp.test/v1", "https://llm.corp.test.evil.test/v1", "https://xcorp.test/"):
        with pytest.raises(Refused):
            check_url(url, policy)


# --- at connect time: a stub resolver maps the allowed name to what the policy refuses --------------------


@pytest.mark.parametrize(
    "addresses",
    [
        ("127.0.0.1",),
        ("169.254.169.254",),
        ("10.1.2.3",),
        ("192.168.10.1",),
        ("::1",),
        ("fd00:ec2::254",),
        ("fe80::1%eth0",),
        ("::ffff:127.0.0.1",),
        ("0.0.0.0",),
        ("93.184.216.34", "127.0.0.1"),  # one bad address refuses the name (no picking the good one)
    ],
)
def test_a_name_resolving_to_a_refused_address_is_refused_before_connecting(
    addresses: tuple[str, ...],
) -> None:
    reason = ask(chat(f"http://{HOST}:6379/v1", resolving_to(*addresses), max_retries=3))
    assert reason.startswith("refused by the outbound policy: grader.test resolves to ")
    assert reason.endswith("(not sent)")  # refused at once, not retried


def test_a_refusal_says_the_same_whether_or_not_anything_listens() -> None:
    # the API, Redis and a closed port on the worker: one reason, decided before any connection
    reasons = {ask(chat(f"http://127.0.0.1:{port}/v1", resolving_to())) for port in (8000, 6379, 1)}
    assert reasons == {
        "refused by the outbound policy: 127.0.0.1 is a loopback or private address (not sent)"
    }


def test_failures_to_reach_an_allowed_host_are_one_message() -> None:
    def failing(error: BaseException) -> Callable[[tuple[str, int], float], socket.socket]:
        def opener(address: tuple[str, int], timeout: float) -> socket.socket:
            assert address[0] == "93.184.216.34"
            raise error

        return opener

    def no_dns(host: str, port: int) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    url = f"https://{HOST}/v1"
    reasons = {
        ask(chat(url, resolving_to("93.184.216.34"), failing(ConnectionRefusedError()), max_retries=1)),
        ask(chat(url, resolving_to("93.184.216.34"), failing(TimeoutError()), max_retries=1)),
        ask(
            chat(url, resolving_to("93.184.216.34"), failing(OSError(113, "No route to host")), max_retries=1)
        ),
        ask(chat(url, no_dns, max_retries=1)),
        ask(chat(url, resolving_to(), max_retries=1)),
    }
    assert reasons == {"connection failed (2 attempts)"}


# --- the connection goes to the checked address, once resolved ------------------------------------------


@contextmanager
def answering_peer(
    reply: bytes,
) -> Iterator[tuple[Callable[[tuple[str, int], float], socket.socket], dict[str, Any]]]:
    """An opener that hands the client one end of a socket pair (no network at all) and a thread that reads
    the request on the other end and answers ``reply``."""
    seen: dict[str, Any] = {"addresses": [], "request": b""}
    threads: list[threading.Thread] = []

    def opener(address: tuple[str, int], timeout: float) -> socket.socket:
        seen["addresses"].append(address)
        client, server = socket.socketpair()

        def serve_once() -> None:
            with server:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += server.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    ),
                    0,
                )
                while len(body) < length:
                    body += server.recv(65536)
                seen["request"] = head + b"\r\n\r\n" + body
                server.sendall(reply)

        thread = threading.Thread(target=serve_once, daemon=True)
        thread.start()
        threads.append(thread)
        client.settimeout(timeout)
        return client

    yield opener, seen
    for thread in threads:
        thread.join(timeout=5)


OK_BODY = b'{"choices": [{"message": {"content": "pinned answer."}}]}'
OK_REPLY = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
    + f"Content-Length: {len(OK_BODY)}\r\n\r\n".encode()
    + OK_BODY
)


def test_the_connection_goes_to_the_checked_address_and_dns_is_asked_once() -> None:
    calls: list[str] = []
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])  # a rebinding resolver: public first, then loopback

    def rebinding(host: str, port: int) -> list[str]:
        calls.append(host)
        return next(answers)

    with answering_peer(OK_REPLY) as (opener, seen):
        client = chat(f"http://{HOST}:8080/v1", rebinding, opener)
        (reply,) = client.complete([[user("hi")]], [0], SAMPLING)
    assert reply == "pinned answer."
    assert calls == [HOST] and seen["addresses"] == [("93.184.216.34", 8080)]
    request: bytes = seen["request"]
    assert request.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert b"\r\nHost: grader.test:8080\r\n" in request  # the name goes in the Host header, not the address


def test_a_redirect_is_not_followed() -> None:
    redirect = (
        b"HTTP/1.1 302 Found\r\nLocation: http://169.254.169.254/latest/meta-data/\r\n"
        b"Content-Length: 0\r\nConnection: close\r\n\r\n"
    )
    with answering_peer(redirect) as (opener, seen):
        reason = ask(chat(f"http://{HOST}/v1", resolving_to("93.184.216.34"), opener, max_retries=3))
    assert reason == "HTTP 302: a redirect, not followed (not retried)"
    assert seen["addresses"] == [("93.184.216.34", 80)]  # one connection, to the checked address


def test_https_connects_to_the_checked_address_and_a_failed_handshake_is_a_connection_failure() -> None:
    addresses: list[tuple[str, int]] = []

    def hang_up(address: tuple[str, int], timeout: float) -> socket.socket:
        addresses.append(address)
        client, server = socket.socketpair()
        server.sendall(b"not TLS at all\r\n\r\n")
        server.close()
        client.settimeout(timeout)
        return client

    reason = ask(chat(f"https://{HOST}/v1", resolving_to("93.184.216.34"), hang_up, max_retries=0))
    assert reason == "connection failed (1 attempts)" and addresses == [("93.184.216.34", 443)]


# --- a loopback fake server, reachable only under the admin's opt-in --------------------------------------


@contextmanager
def redirecting_server(location: str) -> Iterator[tuple[int, list[str]]]:
    paths: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            paths.append(self.path)
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(307)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], paths
    finally:
        server.shutdown()
        server.server_close()


def loopback_only(address: tuple[str, int], timeout: float) -> socket.socket:
    assert address[0] == "127.0.0.1", f"connected to {address}"
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # no resolver: the checked address as it is
    sock.settimeout(timeout)
    sock.connect(address)
    return sock


def test_the_opt_in_reaches_a_loopback_fake_by_name_and_its_redirect_is_not_followed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url_of = lambda port: f"http://{HOST}:{port}/v1"  # noqa: E731
    with redirecting_server("http://169.254.169.254/latest/meta-data/") as (port, paths):
        # without the opt-in the name's loopback address is refused, nothing connects
        assert ask(chat(url_of(port), resolving_to("127.0.0.1"))).startswith("refused by the outbound policy")
        assert paths == []
        monkeypatch.setenv(ALLOW_ENV, f"{HOST},127.0.0.1")
        monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")
        reason = ask(chat(url_of(port), resolving_to("127.0.0.1"), loopback_only, max_retries=2))
    assert reason == "HTTP 307: a redirect, not followed (not retried)"
    assert paths == ["/v1/chat/completions"]  # one request; the metadata address was never asked


def test_the_opt_in_serves_the_scripted_grader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_ENV, "127.0.0.1")
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")
    with serve(Script(key="sk-test")) as url:
        client = chat(url, resolving_to(), loopback_only)
        assert client.complete([[user("hello")]], [0], SAMPLING) == [STUDENT_REPLY]
