"""An OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, TGI, llama.cpp's server, ...) as a
chat model (``worker.core.skillmix.chat.ChatModel``): a Skill-Mix student or grader.

It uses the standard library's HTTP client: the kinds may not import httpx (an import-linter contract
keeps the API client out of them), and a POST with a timeout needs nothing more. Every attempt goes
through ``worker.chat_apis.outbound``: the URL and every address its host resolves to are checked against
the admin's outbound policy, and the connection goes to a checked address only; redirects are not
followed. A refused URL or address is a ``ChatFailure`` at once, before any connection, never retried. A
request that times out, fails to connect (one message, ``connection failed``, whatever the cause), gets a
429 or 5xx, or answers garbage (not JSON, no message content) is retried with exponential backoff; after
the last retry the reply is a ``ChatFailure`` (recorded by the caller, never raised). Other 4xx and 3xx
answers (a bad key, a bad model name, a redirect) are not retried.

The API key is a constructor argument (the project secret the spec names, from the API); it is kept out
of this object's repr, of every failure reason and of the identity used in cache keys and records. With
the key come the hosts its project admin allows it to be sent to (``key_hosts``): every attempt checks the
pinned target (the URL as it will be called, its address when it is a literal) against them before it
connects, and a URL they do not cover is refused like the outbound policy refuses one (not sent, not
retried)."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from worker.chat_apis.outbound import (
    CONNECTION_FAILED,
    ConnectFailed,
    Opener,
    OutboundRefused,
    Resolver,
    connection,
    key_refused,
    open_tcp,
    pin,
    system_resolve,
)
from worker.core.skillmix.chat import ChatFailure, Conversation, Reply, Sampling


class _Garbage(ValueError):
    """A 200 answer that is no chat completion."""


def completions_url(url: str) -> str:
    """``https://host/v1`` -> ``https://host/v1/chat/completions`` (a full URL is kept as it is)."""
    url = url.rstrip("/")
    return url if url.endswith("/chat/completions") else f"{url}/chat/completions"


@dataclass
class OpenAIChat:
    url: str
    model: str
    api_key: str = field(repr=False)
    # where api_key may be sent (worker.specs.confine.secret_hosts entries); None: no bound (a local run)
    key_hosts: tuple[str, ...] | None = None
    timeout_s: float = 60.0
    max_retries: int = 3
    concurrency: int = 4
    backoff_s: float = 0.5
    resolve: Resolver = field(default=system_resolve, repr=False)  # stubbed by tests
    open_socket: Opener = field(default=open_tcp, repr=False)  # stubbed by tests

    @property
    def identity(self) -> str:
        parts = urlsplit(completions_url(self.url))
        return f"openai:{self.model}@{parts.scheme}://{parts.netloc}{parts.path}"

    def complete(
        self, conversations: Sequence[Conversation], seeds: Sequence[int], sampling: Sampling
    ) -> list[Reply]:
        assert len(conversations) == len(seeds), f"{len(conversations)} conversations, {len(seeds)} seeds"
        if not conversations:
            return []
        with ThreadPoolExecutor(max_workers=max(1, min(self.concurrency, len(conversations)))) as pool:
            return list(pool.map(lambda cs: self.one(cs[0], cs[1], sampling), zip(conversations, seeds)))

    def one(self, conversation: Conversation, seed: int, sampling: Sampling) -> Reply:
        body = json.dumps(
            {
                "model": self.model,
                "messages": [{"role": m["role"], "content": m["content"]} for m in conversation],
                "temperature": sampling.temperature,
                "max_tokens": sampling.max_new_tokens,
                "seed": seed,
            }
        ).encode()
        reason = "not sent"
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                status, raw = self._post(body)
            except OutboundRefused as exc:
                return ChatFailure(f"refused by the outbound policy: {exc} (not sent)")
            except ConnectFailed:
                reason = CONNECTION_FAILED
                continue
            except TimeoutError:
                reason = f"timed out after {self.timeout_s:g} s"
                continue
            except (http.client.HTTPException, OSError):
                reason = CONNECTION_FAILED
                continue
            if 300 <= status < 400:
                return ChatFailure(f"HTTP {status}: a redirect, not followed (not retried)")
            if status >= 400:
                reason = f"HTTP {status}"
                if status != 429 and status < 500:
                    return ChatFailure(f"{reason} (not retried)")
                continue
            try:
                return _content(raw)
            except _Garbage as exc:
                reason = str(exc)
        return ChatFailure(f"{reason} ({self.max_retries + 1} attempts)")

    def _post(self, body: bytes) -> tuple[int, bytes]:
        """One POST to a checked, pinned address: (status, body). Raises OutboundRefused (nothing was
        connected), ConnectFailed, TimeoutError or another OSError / HTTPException."""
        pinned = pin(completions_url(self.url), self.resolve)
        if self.api_key and self.key_hosts is not None:
            key_refused(pinned, self.key_hosts)
        conn = connection(pinned, self.timeout_s, self.open_socket)
        try:
            conn.request(
                "POST",
                pinned.target.path,
                body=body,
                headers={
                    "Content-Type": "application/json",
                    **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}),
                    "Connection": "close",
                },
            )
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()


def _content(raw: bytes) -> str:
    try:
        data = json.loads(raw)
        content = data["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise _Garbage("garbage answer (no chat completion)") from None
    if not isinstance(content, str) or not content.strip():
        raise _Garbage("empty completion")
    return content
