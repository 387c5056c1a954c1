"""Saved views of a project (backend/views/service.py): list, create, get, rename or update, delete; get,
update and delete by the view's id alone too (``/views/{id}``: the CLI and SDK reach a view of any project
the caller sees without naming the project)."""

from __future__ import annotations

from fastapi import APIRouter, status

from backend.auth.dependencies import PrincipalDep
from backend.http.deps import Id, SessionDep
from backend.views import service
from backend.views.schemas import ViewCreate, ViewPatch, ViewPublic

router = APIRouter(tags=["views"])


@router.get("/projects/{project_id}/views", response_model=list[ViewPublic], operation_id="views-list")
def list_views(project_id: Id, principal: PrincipalDep, session: SessionDep) -> list[ViewPublic]:
    """The project's saved views, by name (any role in the project)."""
    return service.list_views(session, principal, project_id)


@router.post(
    "/projects/{project_id}/views",
    response_model=ViewPublic,
    status_code=status.HTTP_201_CREATED,
    operation_id="views-create",
)
def create_view(project_id: Id, body: ViewCreate, principal: PrincipalDep, session: SessionDep) -> ViewPublic:
    """Save a view (project members and admins); a name already used in the project is 409."""
    return service.create_view(session, principal, project_id, body)


@router.get("/projects/{project_id}/views/{view_id}", response_model=ViewPublic, operation_id="views-get")
def get_view(project_id: Id, view_id: Id, principal: PrincipalDep, session: SessionDep) -> ViewPublic:
    return service.get_view(session, principal, project_id, view_id)


@router.patch("/projects/{project_id}/views/{view_id}", response_model=ViewPublic, operation_id="views-patch")
def patch_view(
    project_id: Id, view_id: Id, body: ViewPatch, principal: PrincipalDep, session: SessionDep
) -> ViewPublic:
    """Rename a view or replace its state (its author or a project admin)."""
    return service.update_view(session, principal, project_id, view_id, body)


@router.delete(
    "/projects/{project_id}/views/{view_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="views-delete",
)
def delete_view(project_id: Id, view_id: Id, principal: PrincipalDep, session: SessionDep) -> None:
    """Delete a view (its author or a project admin)."""
    service.delete_view(session, principal, project_id, view_id)


@router.get("/views/{view_id}", response_model=ViewPublic, operation_id="views-get-by-id")
def get_view_by_id(view_id: Id, principal: PrincipalDep, session: SessionDep) -> ViewPublic:
    """A view by its id alone, in any project the caller is in (any role); 404 for another project's view,
    as for a missing one."""
    return service.get_view(session, principal, None, view_id)


@router.patch("/views/{view_id}", response_model=ViewPublic, operation_id="views-patch-by-id")
def patch_view_by_id(
    view_id: Id, body: ViewPatch, principal: PrincipalDep, session: SessionDep
) -> ViewPublic:
    """Rename a view or replace its state, by its id alone (its author or a project admin)."""
    return service.update_view(session, principal, None, view_id, body)


@router.delete("/views/{view_id}", status_code=status.HTTP_204_NO_CONTENT, operation_id="views-delete-by-id")
def delete_view_by_id(view_id: Id, principal: PrincipalDep, session: SessionDep) -> None:
    """Delete a view by its id alone (its author or a project admin)."""
    service.delete_view(session, principal, None, view_id)
