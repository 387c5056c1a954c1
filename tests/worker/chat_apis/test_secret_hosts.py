"""A member's skillmix spec named ``api_key_secret: OPENAI_API_KEY`` and an endpoint of
their own, on the outbound allow-list, and the run sent it ``Bearer <the secret>``. A secret now carries
the hosts (or URL prefixes) its project admin allows it to be sent to; the backend refuses other specs at
submission (tests/backend/test_project_secrets.py) and the worker checks every call again, on the pinned
target (the URL as called and, for an address, the address it connects to), before it connects.

Nothing here leaves loopback: DNS is a stub, ``socket.getaddrinfo`` and ``socket.create_connection``
raise, refused targets get a socket opener that fails the test, and the only real connection goes to a
scripted grader on 127.0.0.1 under the admin's opt-in."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from tests.skillmix_grader import STUDENT_REPLY, Script, serve
from tests.worker.kinds.sraven_context import MemoryContext
from worker.chat_apis.openai_chat import OpenAIChat
from worker.core.skillmix.chat import ChatFailure, Sampling, user
from worker.kinds.skillmix.common.loading import endpoint_model
from worker.specs.confine import (
    ALLOW_ENV,
    ALLOW_PRIVATE_ENV,
    OutboundPolicy,
    Refused,
    check_url,
    parse_secret_host,
    secret_hosts,
    secret_refusal,
)
from worker.specs.skillmix.skillmix import ChatEndpoint
from worker.tracking.context import RunError

HOST = "grader.test"  # on the outbound allow-list below, known only to the stub resolvers
SAMPLING = Sampling(0.7, 8)
EVERYWHERE = OutboundPolicy(any_public=True)


@pytest.fixture(autouse=True)
def no_real_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> Any:
        raise AssertionError(f"a real DNS lookup or connection: {args}")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv(ALLOW_ENV, f"{HOST},*.example.com")
    monkeypatch.delenv(ALLOW_PRIVATE_ENV, raising=False)


def never_connect(address: tuple[str, int], timeout: float) -> socket.socket:
    raise AssertionError(f"connected to {address}: the secret's hosts let a refused target through")


def public(host: str, port: int) -> list[str]:
    return ["93.184.216.34"]


def _covered(url: str, *entries: str) -> bool:
    return secret_refusal("K", check_url(url, EVERYWHERE), secret_hosts(list(entries))) is None


def test_what_each_kind_of_entry_covers() -> None:
    # a host name: https to it, any port and path; never plain http, never a name beside or below it
    assert _covered("https://api.openai.com/v1/chat/completions", "api.openai.com")
    assert _covered("https://API.openai.com:8443/x", "api.openai.com")
    assert not _covered("http://api.openai.com/v1", "api.openai.com")
    assert not _covered("https://api.openai.com.evil.example/v1", "api.openai.com")
    assert not _covered("https://x.api.openai.com/v1", "api.openai.com")
    # *.domain: names below it, not the domain itself
    assert _covered("https://east.openai.azure.com/v1", "*.openai.azure.com")
    assert not _covered("https://openai.azure.com/v1", "*.openai.azure.com")
    assert not _covered("https://evilopenai.azure.com/v1", "*.openai.azure.com")
    # an address or network: https to an address literal inside it, never a name
    assert _covered("https://93.184.216.34/v1", "93.184.216.0/24")
    assert not _covered("https://93.184.217.1/v1", "93.184.216.0/24")
    assert _covered("https://[2606:2800:220:1::1]/v1", "[2606:2800:220:1::1]")
    # a URL prefix: its scheme, host and port, a path below it at a / boundary; the only way to http
    prefix = "http://93.184.216.34:8000/v1"
    assert _covered("http://93.184.216.34:8000/v1/chat/completions", prefix)
    assert _covered("http://93.184.216.34:8000/v1", prefix)
    assert not _covered("http://93.184.216.34:8000/v1beta/chat/completions", prefix)
    assert not _covered("http://93.184.216.34:8001/v1/chat/completions", prefix)
    assert not _covered("https://93.184.216.34:8000/v1/chat/completions", prefix)
    assert _covered("https://llm.example.com/v1?x=1", "https://llm.example.com/v1")
    assert _covered("https://llm.example.com:443/v1/a", "https://llm.example.com/v1/")
    # none: nowhere
    assert not _covered("https://api.openai.com/v1")


@pytest.mark.parametrize(
    "entry",
    [
        "",
        "a b",
        "ftp://files.example.com/",
        "https://user:pw@api.example.com/",
        "https://api.example.com/v1?key=1",
        "https://api.example.com/#x",
        "*.com",
        "*.",
        "10.1",
        "0x7f.1",
        "10.0.0.1/8",
        "https://169.254.169.254/",
        "not_a host!",
    ],
)
def test_entries_that_are_no_host_are_refused(entry: str) -> None:
    with pytest.raises(Refused):
        parse_secret_host(entry)


def chat(
    url: str, hosts: tuple[str, ...] | None, resolve: Any = public, opener: Any = never_connect
) -> OpenAIChat:
    return OpenAIChat(
        url=url,
        model="m",
        api_key="sk-bound",
        key_hosts=hosts,
        backoff_s=0.0,
        max_retries=1,
        resolve=resolve,
        open_socket=opener,
    )


def ask(client: OpenAIChat) -> Any:
    (reply,) = client.complete([[user("hi")]], [0], SAMPLING)
    return reply


def test_the_worker_refuses_to_send_a_secret_to_a_host_it_is_not_bound_to_before_connecting() -> None:
    """The member's endpoint is on the outbound allow-list (the probe's case), the secret is bound to
    another host: refused, not sent, nothing connected (``never_connect``)."""
    reply = ask(chat(f"https://{HOST}/v1", ("api.openai.com",)))
    assert isinstance(reply, ChatFailure)
    assert reply.reason.startswith("refused by the outbound policy: project secret")
    assert "api.openai.com" in reply.reason and "(not sent)" in reply.reason
    # bound to nothing (a secret from before the migration): sent nowhere
    reply = ask(chat(f"https://{HOST}/v1", ()))
    assert isinstance(reply, ChatFailure) and "may be sent to no host yet" in reply.reason


def test_the_check_is_on_the_pinned_target_the_connection_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name covered by the secret's hosts goes on to the connection (to the checked address); an address
    literal is covered only when the very address is inside a listed network."""
    opened: list[tuple[str, int]] = []

    def record(address: tuple[str, int], timeout: float) -> socket.socket:
        opened.append(address)
        raise OSError("nothing listens in this test")

    reply = ask(chat(f"https://{HOST}/v1", (HOST,), opener=record))
    assert isinstance(reply, ChatFailure) and reply.reason.startswith("connection failed")
    assert opened and set(opened) == {("93.184.216.34", 443)}
    opened.clear()
    monkeypatch.setenv(ALLOW_ENV, f"{HOST},93.184.216.0/23")  # the addresses are on the allow-list
    ask(chat("https://93.184.216.34/v1", ("93.184.216.0/24",), opener=record))
    assert set(opened) == {("93.184.216.34", 443)}
    reply = ask(chat("https://93.184.216.34/v1", ("93.184.217.0/24",)))  # never_connect
    assert isinstance(reply, ChatFailure) and "93.184.217.0/24" in reply.reason


def test_a_bound_secret_reaches_its_host_and_only_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over real HTTP on loopback (the admin's opt-in): with the grader's URL prefix among the secret's
    hosts the key reaches it; bound elsewhere, the grader never sees a request."""
    monkeypatch.setenv(ALLOW_ENV, "127.0.0.1")
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")

    def loopback(address: tuple[str, int], timeout: float) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(address)
        return sock

    script = Script(key="sk-bound")
    with serve(script) as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        elsewhere = ask(chat(url, (f"http://127.0.0.1:{port + 1}/v1",), opener=loopback))
        assert isinstance(elsewhere, ChatFailure) and "(not sent)" in elsewhere.reason
        assert script.requests == []
        assert ask(chat(url, (f"http://127.0.0.1:{port}/v1",), opener=loopback)) == STUDENT_REPLY
    assert len(script.requests) == 1


class BoundContext(MemoryContext):
    def __init__(self, out_dir: Path, secrets: dict[str, str], hosts: dict[str, tuple[str, ...]]) -> None:
        super().__init__(out_dir=out_dir, secrets=secrets)
        self.hosts = hosts

    def secret_hosts(self, name: str) -> tuple[str, ...] | None:
        return self.hosts.get(name, ())


def test_a_run_whose_endpoint_its_secret_does_not_cover_fails_at_the_field(tmp_path: Path) -> None:
    endpoint = ChatEndpoint(url=f"https://{HOST}/v1", model="g", api_key_secret="OPENAI_API_KEY")
    ctx = BoundContext(tmp_path, {"OPENAI_API_KEY": "sk-project"}, {"OPENAI_API_KEY": ("api.openai.com",)})
    with pytest.raises(RunError, match=r"^grader\.endpoint\.api_key_secret: project secret 'OPENAI_API_KEY'"):
        endpoint_model(endpoint, "grader.endpoint", ctx)
    ctx.hosts["OPENAI_API_KEY"] = (HOST,)
    model = endpoint_model(endpoint, "grader.endpoint", ctx)
    assert model.key_hosts == (HOST,) and model.api_key == "sk-project"
