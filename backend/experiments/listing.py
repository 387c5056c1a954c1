"""The experiments list (``GET /experiments``): the caller's experiments, filtered (project, kind, ``q``),
sorted and paged by a keyset on the id (creation order) or an offset. What it shares with the runs list:
backend/query/listing.py."""

from __future__ import annotations

from sqlalchemy.orm import Session

from backend import query
from backend.auth.principal import Principal
from backend.experiments import present, repository
from backend.experiments.schemas import ExperimentPage
from backend.projects import service as projects
from backend.query import listing
from backend.settings import Settings


def page(
    session: Session,
    principal: Principal,
    settings: Settings,
    *,
    project: str | None,
    kind: str | None,
    q: str | None,
    sort: str,
    desc: bool,
    limit: int,
    cursor_: str | None,
) -> ExperimentPage:
    """A page of the experiments the caller may see (the parameters as ``GET /experiments`` documents
    them)."""
    project_ids = projects.listed_project_ids(session, principal, project)
    dialect = session.get_bind().dialect.name
    condition = listing.condition(query.EXPERIMENTS, q, dialect)
    # a slow params sort or filter on a large table: its index, built in the background (Postgres)
    with listing.timed(settings, dialect, query.EXPERIMENTS, sort, desc, q):
        if sort in ("created", "created_at", "id"):  # ids grow with creation: a keyset page
            after = listing.after_id(cursor_)
            items = repository.page(session, project_ids, kind, limit + 1, after, condition, desc)
            next_cursor = listing.next_after_id(items, limit)
        else:
            ordering = listing.ordering(query.EXPERIMENTS, sort, desc, dialect)
            offset = listing.offset_of(cursor_)
            items = repository.page_ordered(
                session, project_ids, kind, condition, ordering, offset, limit + 1
            )
            next_cursor = listing.next_offset(len(items) > limit, offset, limit)
    return ExperimentPage(items=present.public(session, principal, items[:limit]), next_cursor=next_cursor)
