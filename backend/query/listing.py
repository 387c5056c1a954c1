"""What the runs and experiments lists share (``GET /runs``, ``GET /experiments``): ``q`` as a filter and
``sort`` as an order, each a 422 naming its parameter; a page's cursors (a keyset on the id, or an offset;
the claims and reports lists page by the same keyset cursor); and the page's timing, which has a slow
filter or sort on a spec path indexed (backend/query/autoindex.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from sqlalchemy.sql.elements import ColumnElement

from backend.http import cursor
from backend.query import Entity, QueryError, autoindex, invalid, order, where


class _Row(Protocol):
    @property
    def id(self) -> int: ...


def condition(entity: Entity, q: str | None, dialect: str) -> ColumnElement[bool] | None:
    """The query-language filter ``q`` on ``entity``'s rows, None when blank; Invalid (422) on ``q``."""
    if q is None or not q.strip():
        return None
    try:
        return where(entity, q, dialect)
    except QueryError as exc:
        raise invalid(exc, "q") from None


def ordering(entity: Entity, sort: str, desc: bool, dialect: str) -> list[Any]:
    """ORDER BY clauses for the sort field ``sort`` (``query.order``); Invalid (422) on ``sort``."""
    try:
        return order(entity, sort, desc, dialect)
    except QueryError as exc:
        raise invalid(exc, "sort") from None


def after_id(raw: str | None) -> int | None:
    """The id a keyset page starts after (None on the first page); Invalid for a foreign cursor."""
    return cursor.decode_int(raw, "id")


def offset_of(raw: str | None) -> int:
    """The offset an offset page starts at (0 on the first page); Invalid for a foreign cursor."""
    return cursor.decode_int(raw, "offset") or 0


def next_after_id(rows: Sequence[_Row], limit: int) -> str | None:
    """The next keyset page's cursor when ``rows`` (``limit`` + 1 asked for) hold more than a page."""
    return cursor.encode({"id": rows[limit - 1].id}) if len(rows) > limit else None


def next_offset(more: bool, offset: int, limit: int) -> str | None:
    """The next offset page's cursor when ``more`` rows follow this page's."""
    return cursor.encode({"offset": offset + limit}) if more else None


@contextmanager
def timed(
    settings: Any, dialect: str, entity: Entity, sort: str | None, desc: bool, q: str | None
) -> Iterator[None]:
    """Time the page's SQL (the block) and hand it to the auto-indexer (Postgres: a params path the page
    sorted or filtered by gets its index, built in the background, when the SQL was slow)."""
    started = time.perf_counter()
    yield
    autoindex.indexer.observe(settings, dialect, entity, sort, desc, q, time.perf_counter() - started)
