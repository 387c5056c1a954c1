"""Saved views: any project role reads them, members and admins create them, and only a view's author
or a project admin (site admins included) renames, updates or deletes one. A view is reached under its
project's path or by its id alone (``/views/{id}``); a view of a project the caller is not in answers 404
as a missing one does, as does another project's view under this project's path."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from backend import db, query
from backend.db import utcnow
from backend.errors import Conflict, Forbidden, Invalid, NotFound
from backend.models import SavedView
from backend.projects import service as projects
from backend.projects.service import MAX_VIEWS
from backend.views import repository
from backend.views.schemas import ViewCreate, ViewPatch, ViewPublic, ViewState

if TYPE_CHECKING:
    from backend.auth.principal import Principal


def _may_edit(principal: Principal, role: str, view: SavedView) -> bool:
    if role == "admin":
        return True
    return principal.user is not None and view.author_id == principal.user.id and role == "member"


def public(view: SavedView, can_edit: bool) -> ViewPublic:
    return ViewPublic(
        id=view.id,
        project_id=view.project_id,
        name=view.name,
        page=view.page,  # type: ignore[arg-type]  # stored from a Page literal
        state=ViewState.model_validate(view.state),
        author=view.author.username if view.author else None,
        created_at=view.created_at,
        updated_at=view.updated_at,
        can_edit=can_edit,
    )


def list_views(session: Session, principal: Principal, project_id: int) -> list[ViewPublic]:
    role = projects.require_role(session, principal, project_id, "viewer", f"project {project_id}")
    return [public(v, _may_edit(principal, role, v)) for v in repository.of_project(session, project_id)]


def _get(
    session: Session, principal: Principal, project_id: int | None, view_id: int, minimum: str
) -> tuple[SavedView, str]:
    """The view and the caller's role in its project, if the caller holds at least ``minimum`` there. Under a
    project's path (``project_id``) the project is checked first and another project's view is 404; by id
    alone, a view of a project the caller is not in answers 404 as a missing one does."""
    role = None
    if project_id is not None:
        role = projects.require_role(session, principal, project_id, minimum, f"project {project_id}")
    view = session.get(SavedView, view_id)
    if view is None or (project_id is not None and view.project_id != project_id):
        raise NotFound(f"view {view_id} not found")
    if role is None:
        role = projects.require_role(session, principal, view.project_id, minimum, f"view {view_id}")
    return view, role


def get_view(session: Session, principal: Principal, project_id: int | None, view_id: int) -> ViewPublic:
    """``project_id`` None: the view found by its id alone (``GET /views/{id}``)."""
    view, role = _get(session, principal, project_id, view_id, "viewer")
    return public(view, _may_edit(principal, role, view))


def _duplicate(name: str) -> Conflict:
    return Conflict(
        f"a view named {name!r} already exists in this project",
        [{"loc": ["body", "name"], "msg": "a view of this project has this name", "type": "duplicate"}],
    )


def _check_state(session: Session, page: str, state: ViewState) -> None:
    """A view's query and group fields as its page would take them: a query or field the list would
    answer 422 for is a 422 here, at the field of the view's state, with the position (a stored view
    that cannot be shown is no view)."""
    dialect = session.get_bind().dialect.name
    entity = query.EXPERIMENTS if page == "experiments" else query.RUNS
    problems: list[tuple[list[str | int], query.QueryError]] = []
    # the pages' search boxes read plain words as a name search (the dashboard's QueryBox)
    text = query.box_query(state.query)
    if text:
        try:
            query.where(entity, text, dialect)
        except query.QueryError as exc:
            problems.append((["body", "state", "query"], exc))
    for i, name in enumerate(state.group_by if isinstance(state.group_by, list) else []):
        try:
            if entity is query.RUNS:
                query.group_field(entity, name, dialect)
            else:
                query.parse_field(name)
        except query.QueryError as exc:
            problems.append((["body", "state", "group_by", i], exc))
    if problems:
        loc, first = problems[0]
        raise Invalid(
            f"{'.'.join(str(p) for p in loc[1:])}: {first}",
            [{"loc": loc, "msg": str(exc), "type": "query_syntax"} for loc, exc in problems],
        )


def _flush(session: Session, name: str) -> None:
    try:
        session.flush()
    except IntegrityError:  # the same name saved by another request at the same moment
        session.rollback()
        raise _duplicate(name) from None


def create_view(session: Session, principal: Principal, project_id: int, body: ViewCreate) -> ViewPublic:
    role = projects.require_role(session, principal, project_id, "member", f"project {project_id}")
    if repository.by_name(session, project_id, body.name) is not None:
        raise _duplicate(body.name)
    _check_state(session, body.page, body.state)
    projects.lock_for_cap(session, project_id)
    now = utcnow()
    view = SavedView(
        project_id=project_id,
        name=body.name,
        page=body.page,
        state=body.state.model_dump(mode="json"),
        author_id=principal.user.id if principal.user is not None else None,
        created_at=now,
        updated_at=now,
    )
    session.add(view)
    _flush(session, body.name)
    held = db.count_rows(session, SavedView, SavedView.project_id == project_id)
    projects.check_cap(project_id, held, MAX_VIEWS, "saved views", "save another")
    return public(view, _may_edit(principal, role, view))


def _editable(session: Session, principal: Principal, project_id: int | None, view_id: int) -> SavedView:
    view, role = _get(session, principal, project_id, view_id, "member")
    if not _may_edit(principal, role, view):
        raise Forbidden("only the view's author or a project admin may change or delete it")
    return view


def update_view(
    session: Session, principal: Principal, project_id: int | None, view_id: int, body: ViewPatch
) -> ViewPublic:
    view = _editable(session, principal, project_id, view_id)
    if body.name is not None and body.name != view.name:
        if repository.by_name(session, view.project_id, body.name) is not None:
            raise _duplicate(body.name)
        view.name = body.name
    if body.state is not None:
        _check_state(session, view.page, body.state)
        view.state = body.state.model_dump(mode="json")
    view.updated_at = utcnow()
    _flush(session, view.name)
    return public(view, True)


def delete_view(session: Session, principal: Principal, project_id: int | None, view_id: int) -> None:
    view = _editable(session, principal, project_id, view_id)
    session.delete(view)
    session.flush()
