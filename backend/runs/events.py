"""Server-sent events per run: status, progress and the latest metric steps, until the run ends.

The stream polls the database (portable across SQLite and Postgres, and across API replicas) and
sends only what changed since the last poll.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from backend.auth.dependencies import CurrentUser, PrincipalDep
from backend.auth.principal import Principal
from backend.auth.security import RUN_READ, make_jwt
from backend.http.deps import Id, SessionDep, SettingsDep
from backend.models import Run
from backend.runs import present, service
from backend.runs.schemas import RunEvent
from common.runs import FINISHED_STATUSES

router = APIRouter(prefix="/runs", tags=["runs"])
POLL_SECONDS = 0.5
KEEPALIVE_SECONDS = 15.0


def _snapshot(
    factory: sessionmaker[Session], run_id: Id, heartbeat_timeout: float
) -> tuple[dict[str, Any], dict[str, int]] | None:
    with factory() as session:
        run = session.get(Run, run_id)
        if run is None:
            return None
        return present.streamed(session, run, heartbeat_timeout)


def _event(name: str, data: Any) -> str:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


async def stream(request: Request, run_id: Id) -> AsyncIterator[str]:
    factory: sessionmaker[Session] = request.app.state.session_factory
    heartbeat_timeout: float = request.app.state.settings.heartbeat_timeout
    last_status: tuple[Any, ...] | None = None
    last_progress: dict[str, Any] | None = None
    last_steps: dict[str, int] = {}
    idle = 0.0
    yield "retry: 2000\n\n"
    while not await request.is_disconnected():
        snap = await run_in_threadpool(_snapshot, factory, run_id, heartbeat_timeout)
        if snap is None:
            yield _event("end", {"status": "deleted"})
            return
        run, steps = snap
        sent = False
        # held: a lost worker's run goes on "running" until the reaper requeues it, but the page must stop
        # calling it live as soon as the heartbeat is stale
        key = (
            run["status"],
            run["attempt"],
            run["worker"],
            run["cancel_requested"],
            run["error"],
            run["held"],
        )
        if key != last_status:
            last_status = key
            yield _event("status", run)
            sent = True
        if run["progress"] != last_progress:
            last_progress = run["progress"]
            yield _event("progress", run["progress"])
            sent = True
        changed = {k: s for k, s in steps.items() if last_steps.get(k) != s}
        if changed:
            last_steps = steps
            yield _event("metrics", {"steps": changed})
            sent = True
        if run["status"] in FINISHED_STATUSES:
            yield _event("end", {"status": run["status"]})
            return
        idle = 0.0 if sent else idle + POLL_SECONDS
        if idle >= KEEPALIVE_SECONDS:
            idle = 0.0
            yield ": keep-alive\n\n"
        await asyncio.sleep(POLL_SECONDS)


@router.get(
    "/{run_id}/events",
    operation_id="runs-events",
    response_class=StreamingResponse,
    # the event schemas go into the document's components; backend.openapi moves them under
    # text/event-stream, where the generated client and the dashboard's event hook find them
    responses={
        200: {
            "model": RunEvent,
            "content": {"text/event-stream": {}},
            "description": "server-sent events: status, progress, metrics, end",
        }
    },
)
def run_events(
    run_id: Id,
    request: Request,
    principal: PrincipalDep,
    session: SessionDep,
    ticket: Annotated[
        str | None,
        Query(
            max_length=2000,
            description="a run read ticket from POST /runs/{run_id}/read-ticket, for clients that "
            "cannot send an Authorization header (a browser's EventSource)",
        ),
    ] = None,
) -> StreamingResponse:
    service.get_visible(session, principal, run_id)
    session.commit()  # end this request's transaction now: the stream may stay open for hours
    session.close()
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(stream(request, run_id), media_type="text/event-stream", headers=headers)


READ_TICKET_SECONDS = 60


class RunReadTicket(BaseModel):
    ticket: str = Field(
        description="pass as ?ticket= to GET /runs/{run_id}/events or GET /runs/{run_id}/artifacts/{path} "
        "within a minute"
    )
    expires_at: datetime


@router.post("/{run_id}/read-ticket", response_model=RunReadTicket, operation_id="runs-read_ticket")
def read_ticket(run_id: Id, user: CurrentUser, session: SessionDep, settings: SettingsDep) -> RunReadTicket:
    """A one-minute ticket to read this run from a URL: its event stream and its artifact downloads. A
    browser's EventSource and a plain download link cannot send headers, and a login token in a URL ends
    up in access logs and browser history."""
    service.get_visible(session, Principal(user=user), run_id)
    ticket, expires = make_jwt(user.id, settings.secret_key, READ_TICKET_SECONDS, typ=RUN_READ, run=run_id)
    return RunReadTicket(ticket=ticket, expires_at=expires)


# The route's earlier name (it also opened artifact downloads, not only the event stream): kept
# for dashboards and scripts of earlier versions, the same handler under its old operation id.
router.post(
    "/{run_id}/events/ticket",
    response_model=RunReadTicket,
    operation_id="runs-events_ticket",
    deprecated=True,
    summary="Read Ticket (deprecated path: use POST /runs/{run_id}/read-ticket)",
)(read_ticket)
