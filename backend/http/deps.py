"""The request's own dependencies as named ``Annotated`` aliases (settings, session, the dispatcher's wake,
ids): signatures read like prose. Who is calling is authorization's (backend/auth/dependencies.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated

from fastapi import Depends, Path, Query, Request
from sqlalchemy.orm import Session, sessionmaker

from backend.settings import Settings


def get_settings_dep(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_session(request: Request) -> Iterator[Session]:
    """One session per request; the route (or service at the boundary) commits."""
    factory: sessionmaker[Session] = request.app.state.session_factory
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
# scope="function": the session commits when the route returns, before the response is sent, so a 2xx
# always means the write is durable (a failed commit becomes an error response, never a silent loss).
SessionDep = Annotated[Session, Depends(get_session, scope="function")]


def get_wake(request: Request) -> Callable[[], None]:
    """Wakes the dispatcher so a committed run is sent at once instead of at the next poll."""
    dispatcher = getattr(request.app.state, "dispatcher", None)
    return dispatcher.wake if dispatcher is not None else (lambda: None)


WakeDispatcher = Annotated[Callable[[], None], Depends(get_wake)]

# Ids are 32-bit integers in every database we support: a larger one is a 422, never a driver overflow.
MAX_ID = 2_147_483_647
Id = Annotated[int, Path(ge=1, le=MAX_ID)]
OptionalId = Annotated[int | None, Query(ge=1, le=MAX_ID)]
