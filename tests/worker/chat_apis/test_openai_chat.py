"""The OpenAI-compatible chat client against a real HTTP server: the bearer key, retries of timeouts and
garbage, a failure after the last retry (returned, never raised), no retry of a refused key, and no key
in its repr, identity or failure reasons. The fake server listens on 127.0.0.1: the admin's opt-in lets
the client reach it (``loopback_endpoints``); tests/worker/chat_apis/test_outbound_guard.py shows what is
refused without it."""

from __future__ import annotations

import pytest

from tests.skillmix_grader import STUDENT_REPLY, Script, serve
from worker.chat_apis.openai_chat import OpenAIChat, completions_url
from worker.core.skillmix.chat import ChatFailure, Sampling, user

KEY = "sk-test-0123456789abcdef-secret"
SAMPLING = Sampling(0.7, 16)

pytestmark = pytest.mark.usefixtures("loopback_endpoints")


def client(url: str, key: str = KEY, **kw: float) -> OpenAIChat:
    return OpenAIChat(url=url, model="scripted", api_key=key, backoff_s=0.01, **kw)  # type: ignore[arg-type]


def test_answers_and_sends_model_messages_seed_and_key() -> None:
    script = Script(key=KEY)
    with serve(script) as url:
        replies = client(url).complete([[user("hello")], [user("again")]], [3, 4], SAMPLING)
    assert replies == [STUDENT_REPLY, STUDENT_REPLY]
    sent = sorted(script.requests, key=lambda r: r["seed"])
    assert [(r["model"], r["seed"], r["max_tokens"], r["temperature"]) for r in sent] == [
        ("scripted", 3, 16, 0.7),
        ("scripted", 4, 16, 0.7),
    ]


def test_garbage_and_timeouts_are_retried_then_fail_without_raising() -> None:
    script = Script(key=KEY, garbage_first=2)
    with serve(script) as url:
        assert client(url, max_retries=2).complete([[user("x")]], [0], SAMPLING) == [STUDENT_REPLY]
    assert script.seen["x"] == 3

    script = Script(key=KEY, stall_first=1, stall_s=1.5)
    with serve(script) as url:
        assert client(url, timeout_s=0.3, max_retries=1).complete([[user("y")]], [0], SAMPLING) == [
            STUDENT_REPLY
        ]

    script = Script(key=KEY, always_garbage=True)
    with serve(script) as url:
        (reply,) = client(url, max_retries=2).complete([[user("z")]], [0], SAMPLING)
    assert isinstance(reply, ChatFailure) and "garbage" in reply.reason and script.seen["z"] == 3


def test_a_refused_key_is_not_retried_and_the_key_is_nowhere() -> None:
    script = Script(key=KEY)
    with serve(script) as url:
        chat = client(url, key="sk-wrong-key-777")
        (reply,) = chat.complete([[user("q")]], [0], SAMPLING)
    assert isinstance(reply, ChatFailure) and reply.reason.startswith("HTTP 401") and not script.requests
    for text in (repr(chat), chat.identity, reply.reason):
        assert "sk-wrong-key-777" not in text
    dead = client("http://127.0.0.1:9/v1", max_retries=1)
    (reply,) = dead.complete([[user("q")]], [0], SAMPLING)
    assert isinstance(reply, ChatFailure) and "connection failed" in reply.reason


def test_completions_url() -> None:
    assert completions_url("http://h/v1/") == "http://h/v1/chat/completions"
    assert completions_url("http://h/v1/chat/completions") == "http://h/v1/chat/completions"
