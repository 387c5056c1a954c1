"""No credential in a logged URL: uvicorn's access log prints the request target, query string included,
and a run read ticket (or a token a client put there by mistake) would sit in the log file.

The auth path (backend/auth/dependencies.py) reads ``ticket`` from the *decoded* query (Starlette's
query_params), so ``?%74icket=``, ``?tick%65t=`` and ``?%74%69%63%6B%65%74=`` all open a stream, while
the log line holds the raw, encoded target (a redaction of the literal ``ticket=`` missed
them). So the redaction decodes each parameter's name (percent-encoding in either case, ``+``, and again
while decoding changes it: a double encoding too) and compares it case-insensitively, by substring, with
the secret words: it covers every spelling the auth path accepts (the exact name ``ticket``,
case-sensitive, however encoded) and more (``TICKET``, ``x-ticket``, ``api_key``, ``access_token``,
``password``...). Besides, anything shaped like a JWT (a run read ticket, a login token), an API or run
token (``rl_...``, ``rlrun_...``), a report's share link (``rlshare_...``, in a path) or a generated worker
token (``wk_...``), and the configured worker
token itself (whatever an operator set it to), is redacted wherever it stands in a logged line, under
any parameter name (``?x=<the worker token>``), a path included.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from urllib.parse import quote, unquote_plus

SECRET_WORDS = ("ticket", "token", "key", "password", "passwd", "secret", "auth", "credential", "session")

# a query: from a '?' to the end of the target (whitespace or a quote ends it in a log line)
_QUERY = re.compile(r"\?([^\s\"']*)")
# a parameter's raw name: what the log may keep when the value goes
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_.~%+-]{1,64}$")
# JWTs (three base64url parts, the first a JSON header: 'eyJ'), and ReasonLab's API and run tokens
_TOKENS = re.compile(
    r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*|\brl(?:run|share)?[_.][A-Za-z0-9_.-]{16,}"
    r"|\bwk_[A-Za-z0-9_-]{16,}"
)
REDACTED = "[redacted]"
MIN_SECRET = 8  # a configured secret shorter than this is not searched for (it would redact words)
# the configured secrets (the worker token), as they are and percent-encoded: longest first
_known: list[str] = []


def decoded(text: str, rounds: int = 4) -> str:
    """``text`` percent- and plus-decoded until it stops changing (at most ``rounds`` times)."""
    for _ in range(rounds):
        plain = unquote_plus(text)
        if plain == text:
            break
        text = plain
    return text


def is_secret_name(raw_name: str) -> bool:
    name = decoded(raw_name).lower()
    return any(word in name for word in SECRET_WORDS)


def _redact_query(query: str) -> str:
    parts = re.split(r"([&;?])", query)
    for i in range(0, len(parts), 2):
        part = parts[i]
        name = part.partition("=")[0]
        # a name decoded to hold '=' or '&' (ticket%3D...) may carry the value itself: drop it all
        if is_secret_name(name):
            plain_name = _PLAIN_NAME.match(name) and not set(decoded(name)) & set("=&;")
            parts[i] = f"{name}={REDACTED}" if plain_name else REDACTED
    return "".join(parts)


def redact(text: str) -> str:
    """``/x?ticket=abc&y=1`` -> ``/x?ticket=[redacted]&y=1``; also ``?%74icket=abc``, ``?TICKET=abc``,
    and JWT- or API-token-shaped strings anywhere."""
    text = _QUERY.sub(lambda m: "?" + _redact_query(m.group(1)), text)
    for secret in _known:
        text = text.replace(secret, REDACTED)
    return _TOKENS.sub(REDACTED, text)


def remember(secrets: Iterable[str]) -> None:
    """Redact these values (as they are and percent-encoded) wherever they stand in a logged line."""
    for secret in secrets:
        if len(secret) >= MIN_SECRET:
            for form in (secret, quote(secret, safe=""), quote(secret, safe="").lower()):
                if form not in _known:
                    _known.append(form)
    _known.sort(key=len, reverse=True)


class RedactCredentials(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        return True


def install(secrets: Iterable[str] = ()) -> None:
    """The redaction on uvicorn's loggers; ``secrets``: values to redact besides the shapes above."""
    remember(secrets)
    for name in ("uvicorn.access", "uvicorn.error"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactCredentials) for f in logger.filters):
            logger.addFilter(RedactCredentials())
