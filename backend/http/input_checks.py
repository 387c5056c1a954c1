"""Text the databases cannot store is a 422 naming its field, on every route.

Postgres refuses a NUL character in any text (and the metric COPY failed with a 500); a lone UTF-16
surrogate (``\\ud800`` with no partner) cannot be encoded as UTF-8 at all, so it failed on SQLite as well,
or later when the stored value was sent back. ``refuse_unstorable_text`` is a dependency of every API
route, solved before the route's own dependencies and validation; it looks at

- path and query parameters (decoded from the URL: a ``%00`` is a NUL; surrogates cannot arrive there);
- the JSON body. JSON can carry a NUL only as the escape ``\\u0000`` and a surrogate only as an escape
  ``\\ud800``-``\\udfff`` (raw control characters and invalid UTF-8 fail parsing), so the raw bytes are
  searched for those escapes first (a regular expression, ~1 GB/s); only a body that has one (a valid
  pair such as ``\\ud83d\\ude00`` for an emoji does) is parsed and walked to name the offending fields,
  object keys included. The streamed uploads' bodies (bytes, not JSON, up to 256 GiB: an artifact, a
  dataset; ``RouteClass.streamed`` in backend/http/limits.py) are their routes' to read as they arrive,
  never here: reading one here held it whole in memory, inside its admission slot.
"""

from __future__ import annotations

import json
import re
from typing import Any

from fastapi import Request

from backend.errors import Invalid
from backend.http.limits import route_class

_ESCAPES = re.compile(rb"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")
MAX_ERRORS = 50


def unstorable(text: str) -> str | None:
    """Why ``text`` cannot be stored (a NUL character, a lone surrogate), or None when it can."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which cannot be stored"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # only a surrogate fails: every other code point encodes
            return "contains a lone UTF-16 surrogate (\\ud800-\\udfff), which is not text"
    return None


def _printable(key: str) -> str:
    """A field name as an error can carry it: NUL and surrogates as escapes."""
    return key.replace("\x00", "\\u0000").encode("utf-8", "backslashreplace").decode("utf-8")


def _item(loc: list[str | int], msg: str) -> dict[str, Any]:
    return {"loc": loc, "msg": msg, "type": "unstorable_text"}


def _walk(value: Any, loc: list[str | int], errors: list[dict[str, Any]]) -> None:
    if len(errors) >= MAX_ERRORS:
        return
    if isinstance(value, str):
        reason = unstorable(value)
        if reason is not None:
            errors.append(_item(loc, f"text {reason}"))
    elif isinstance(value, dict):
        for key, item in value.items():
            reason = unstorable(key)
            if reason is not None:
                errors.append(_item([*loc, _printable(key)], f"key {reason}"))
                continue
            _walk(item, [*loc, key], errors)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _walk(item, [*loc, i], errors)


def body_errors(body: bytes) -> list[dict[str, Any]]:
    """The unstorable strings of a JSON body, as API error items (``loc`` from ``"body"``)."""
    if not _ESCAPES.search(body):
        return []
    try:
        parsed = json.loads(body)
    except ValueError:  # not JSON: the route's own parsing answers it
        return []
    errors: list[dict[str, Any]] = []
    _walk(parsed, ["body"], errors)
    return errors


def _has_body(request: Request) -> bool:
    length = request.headers.get("content-length")
    return "transfer-encoding" in request.headers or (length is not None and length.strip() not in ("", "0"))


async def refuse_unstorable_text(request: Request) -> None:
    errors: list[dict[str, Any]] = []
    for name, value in request.path_params.items():
        reason = unstorable(value) if isinstance(value, str) else None
        if reason is not None:
            errors.append(_item(["path", name], f"text {reason}"))
    for name, value in request.query_params.multi_items():
        reason = unstorable(name) or unstorable(value)
        if reason is not None:
            errors.append(_item(["query", _printable(name)], f"text {reason}"))
    if _has_body(request) and not route_class(request.scope["path"]).streamed:
        # the body is already read (and cached on the request) for routes that take one; RequestLimits
        # bounded its size and checked its credential before any of it was read
        errors += body_errors(await request.body())
    if errors:
        where = ".".join(str(p) for p in errors[0]["loc"])
        raise Invalid(f"{where}: {errors[0]['msg']}", errors[:MAX_ERRORS])
