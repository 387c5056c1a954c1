"""No credential in a logged URL: uvicorn's access log prints the request target, query string included,
and a stream ticket (or a token a client put there by mistake) would sit in the log file."""

from __future__ import annotations

import logging
import re

SECRET_PARAMS = re.compile(r"((?:^|[?&])(?:ticket|token|access_token|api_key|key|password)=)[^&\s\"]*", re.I)


def redact(text: str) -> str:
    """``/x?ticket=abc&y=1`` -> ``/x?ticket=[redacted]&y=1``."""
    return SECRET_PARAMS.sub(r"\1[redacted]", text)


class RedactCredentials(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        return True


def install() -> None:
    for name in ("uvicorn.access", "uvicorn.error"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactCredentials) for f in logger.filters):
            logger.addFilter(RedactCredentials())
