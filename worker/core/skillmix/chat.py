"""The chat-model protocol students and graders speak (no HTTP here: worker.core does none; the
OpenAI-compatible endpoint lives in ``worker/chat_apis/openai_chat.py``, the local HF model in
``hf_chat.py``, the rule-based grader in ``rule_grader.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypedDict


class Message(TypedDict):
    role: Literal["system", "user", "assistant"]
    content: str


Conversation = list[Message]


@dataclass(frozen=True)
class Sampling:
    """How to answer: temperature 0 is greedy; ``max_new_tokens`` bounds each reply."""

    temperature: float
    max_new_tokens: int


@dataclass(frozen=True)
class ChatFailure:
    """A request that failed after its retries (timeouts, errors, garbage): recorded, never raised."""

    reason: str


Reply = str | ChatFailure


class ChatModel(Protocol):
    @property
    def identity(self) -> str:
        """What names this model in cache keys and records (a name or URL and model; never a secret)."""
        ...

    def complete(
        self, conversations: Sequence[Conversation], seeds: Sequence[int], sampling: Sampling
    ) -> list[Reply]:
        """One reply per conversation (the next assistant turn), sampled with that conversation's seed."""
        ...


def user(content: str) -> Message:
    return {"role": "user", "content": content}


def assistant(content: str) -> Message:
    return {"role": "assistant", "content": content}
