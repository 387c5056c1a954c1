"""A run's artifacts (checkpoints, outputs, the final model): list, download, and for workers upload and
delete. The store behind them is ``REASONLAB_ARTIFACT_URL`` (backend/store.py)."""

from __future__ import annotations

import mimetypes
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Query, Request, status
from fastapi.responses import Response, StreamingResponse
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from backend.artifacts import service
from backend.artifacts.dependencies import StoreDep
from backend.artifacts.schemas import ArtifactList, ArtifactPublic
from backend.auth.dependencies import PrincipalDep
from backend.auth.principal import Principal
from backend.errors import NotFound
from backend.http.deps import Id, SessionDep
from backend.http.transfers import BINARY, UPLOAD_BODY, copy_body, release_session
from backend.runs import service as runs

router = APIRouter(prefix="/runs", tags=["artifacts"])


Attempt = Annotated[int, Query(ge=1, le=2**31 - 1, description="the writing worker's attempt (409 if stale)")]


def content_disposition(path: str) -> str:
    """``attachment`` with the file's own name: an ASCII fallback and the RFC 6266 UTF-8 form."""
    name = path.rsplit("/", 1)[-1]
    fallback = "".join(c if c.isascii() and c not in '"\\' else "_" for c in name)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


@router.get("/{run_id}/artifacts", response_model=ArtifactList, operation_id="artifacts-list")
def list_artifacts(run_id: Id, principal: PrincipalDep, session: SessionDep, store: StoreDep) -> ArtifactList:
    """Every stored file of the run: path, size, modification time and kind, and the total size."""
    runs.get_visible(session, principal, run_id)
    release_session(session)
    return service.listing(store, run_id)


@router.get(
    "/{run_id}/artifacts/{path:path}",
    operation_id="artifacts-download",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/octet-stream": BINARY}, "description": "the file, streamed"}},
)
def download_artifact(
    run_id: Id,
    path: str,
    principal: PrincipalDep,
    session: SessionDep,
    store: StoreDep,
    ticket: Annotated[
        str | None,
        Query(
            max_length=2000,
            description="a run read ticket from POST /runs/{run_id}/read-ticket, for a browser's plain download "
            "link (it cannot send an Authorization header)",
        ),
    ] = None,
) -> StreamingResponse:
    """One file, streamed, as an attachment with its length and type."""
    clean = service.clean_path(path)
    runs.get_visible(session, principal, run_id)
    release_session(session)
    stored = service.stat(store, run_id, clean)
    if stored is None:
        raise NotFound(f"run {run_id} has no artifact {clean!r}")
    media_type = mimetypes.guess_type(clean)[0] or "application/octet-stream"
    headers = {
        "Content-Length": str(stored.size),
        "Content-Disposition": content_disposition(clean),
        # the bytes as stored: no gzip on top (it would drop the length), nothing for a proxy to keep
        "Content-Encoding": "identity",
        "Cache-Control": "private, no-store",
    }
    return StreamingResponse(store.chunks(run_id, clean), media_type=media_type, headers=headers)


def _writable(session: Session, principal: Principal, run_id: int, attempt: int) -> None:
    """Workers write a run's artifacts while their attempt owns it (like metrics and results)."""
    run = runs.get_for_worker(session, principal, run_id, lifecycle=True)
    runs.check_writer(run, attempt)
    release_session(session)


@router.put(
    "/{run_id}/artifacts/{path:path}",
    response_model=ArtifactPublic,
    operation_id="artifacts-upload",
    openapi_extra=UPLOAD_BODY,
)
async def upload_artifact(
    run_id: Id,
    path: str,
    attempt: Attempt,
    principal: PrincipalDep,
    session: SessionDep,
    store: StoreDep,
    request: Request,
) -> ArtifactPublic:
    """The worker token (or a site admin) writes a file of a running run, the body streamed to the store
    and made visible at once when complete (replacing a file of the same path)."""
    clean = service.clean_path(path)
    await run_in_threadpool(_writable, session, principal, run_id, attempt)
    with service.store_errors(run_id, clean):
        staged = await run_in_threadpool(store.stage, run_id, clean)
    with service.store_errors(run_id, clean):
        try:
            await copy_body(request, staged.write)
            await run_in_threadpool(staged.commit)
        finally:
            await run_in_threadpool(staged.discard)
    stored = await run_in_threadpool(service.stat, store, run_id, clean)
    if stored is None:  # deleted again in between
        raise NotFound(f"run {run_id} has no artifact {clean!r}")
    return service.public(stored)


@router.delete(
    "/{run_id}/artifacts/{path:path}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="artifacts-delete",
)
def delete_artifact(
    run_id: Id, path: str, attempt: Attempt, principal: PrincipalDep, session: SessionDep, store: StoreDep
) -> Response:
    """The worker removes a file of its running run (an old checkpoint past the newest few)."""
    clean = service.clean_path(path)
    _writable(session, principal, run_id, attempt)
    service.delete(store, run_id, clean)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
