"""What the routes that move files share (a run's artifacts, a project's datasets): the OpenAPI shape of a
binary body, ending the request's transaction before a transfer, and copying a streamed body out in
batches. The artifact store they write to is a dependency of the artifacts domain's
(backend/artifacts/dependencies.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import Request
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from backend.errors import ClientGone
from backend.http.admission import released

BINARY = {"schema": {"type": "string", "format": "binary"}}

UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {"required": True, "content": {"application/octet-stream": BINARY}}
}


def release_session(session: Session) -> None:
    """End the request's transaction before a long transfer: no database connection held meanwhile."""
    session.commit()
    session.close()


# bytes handed to a store's write at once: a body arrives in pieces of a few KiB, a write per piece would be
# a system call (or an object-store part) each
WRITE_BATCH = 1024 * 1024


async def copy_body(request: Request, write: Callable[[bytes], object]) -> None:
    """The request's body, as it streams in, to ``write`` (run in a worker thread) in batches of at least
    ``WRITE_BATCH`` bytes, the last one shorter. The request gives its admission slot back meanwhile
    (backend/http/admission.py): the copy waits on its client and holds no database connection (call
    ``release_session`` first), and takes a slot again once the body is in."""
    pending = bytearray()
    async with released(request.scope):
        try:
            async for chunk in request.stream():
                pending += chunk
                if len(pending) >= WRITE_BATCH:
                    await run_in_threadpool(write, bytes(pending))
                    pending.clear()
        except ClientDisconnect:
            # the client hung up mid-body: the route's staged file is dropped as for any error, and the
            # answer (to no one) is an error of ours, not an unhandled exception with its traceback
            raise ClientGone("the client closed the connection before the body was complete") from None
        if pending:
            await run_in_threadpool(write, bytes(pending))
