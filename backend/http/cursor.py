"""Opaque pagination cursors (base64 JSON), so clients never build them."""

from __future__ import annotations

import base64
import json
from typing import Any

from backend.errors import Invalid


def encode(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).decode().rstrip("=")


def decode_int(cursor: str | None, key: str) -> int | None:
    """The integer ``key`` of a cursor (None without a cursor); Invalid for any other shape."""
    data = decode(cursor)
    if data is None:
        return None
    value = data.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**62:
        raise Invalid(
            "invalid cursor",
            [{"loc": ["query", "cursor"], "msg": "not a cursor from next_cursor", "type": "cursor"}],
        )
    return value


def decode(cursor: str | None) -> dict[str, Any] | None:
    if not cursor:
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if not isinstance(data, dict):
            raise ValueError
        return data
    except (ValueError, UnicodeDecodeError) as exc:
        raise Invalid(
            "invalid cursor",
            [{"loc": ["query", "cursor"], "msg": "not a cursor from next_cursor", "type": "cursor"}],
        ) from exc
