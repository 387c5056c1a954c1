"""Deprecated: the Python SDK is the ``reasonlab_sdk`` package now (``sdk/``, ``pip install ./sdk``).

This module only re-exports it, for notebooks and scripts that still say ``from worker.client import
ReasonLabClient``; write ``from reasonlab_sdk import ReasonLabClient`` instead, which needs httpx only
(no torch, no mlflow). The worker itself imports ``reasonlab_sdk``.
"""

from __future__ import annotations

from reasonlab_sdk.client import (
    API_PREFIX,
    ApiError,
    ApiUnavailable,
    Conflict,
    FinishStatus,
    Forbidden,
    Invalid,
    Json,
    NotFound,
    ReasonLabClient,
    SseEvent,
    TooLarge,
    Unauthorized,
    api_base_url,
    is_storable,
    parse_sse,
    storable_text,
)

__all__ = [
    "API_PREFIX",
    "ApiError",
    "ApiUnavailable",
    "Conflict",
    "FinishStatus",
    "Forbidden",
    "Invalid",
    "Json",
    "NotFound",
    "ReasonLabClient",
    "SseEvent",
    "TooLarge",
    "Unauthorized",
    "api_base_url",
    "is_storable",
    "parse_sse",
    "storable_text",
]
