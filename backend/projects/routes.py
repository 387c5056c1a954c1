from __future__ import annotations

from fastapi import APIRouter, status

from backend.auth.dependencies import PrincipalDep
from backend.http.deps import Id, SessionDep
from backend.projects import service
from backend.projects.schemas import MemberPublic, MemberSet, ProjectCreate, ProjectPublic

router = APIRouter(prefix="/projects", tags=["projects"])


@router.get("", response_model=list[ProjectPublic], operation_id="projects-list")
def list_projects(principal: PrincipalDep, session: SessionDep) -> list[ProjectPublic]:
    return [
        ProjectPublic(id=p.id, name=p.name, description=p.description, created_at=p.created_at, role=role)
        for p, role in service.visible_projects(session, principal)
    ]


@router.post(
    "", response_model=ProjectPublic, status_code=status.HTTP_201_CREATED, operation_id="projects-create"
)
def create_project(body: ProjectCreate, principal: PrincipalDep, session: SessionDep) -> ProjectPublic:
    p = service.create_project(session, principal, body.name, body.description)
    return ProjectPublic(
        id=p.id, name=p.name, description=p.description, created_at=p.created_at, role="admin"
    )


@router.get("/{project_id}/members", response_model=list[MemberPublic], operation_id="projects-members")
def list_members(project_id: Id, principal: PrincipalDep, session: SessionDep) -> list[MemberPublic]:
    return [
        MemberPublic(user_id=u.id, username=u.username, role=r)
        for u, r in service.members(session, principal, project_id)
    ]


@router.put("/{project_id}/members", response_model=MemberPublic, operation_id="projects-set_member")
def set_member(project_id: Id, body: MemberSet, principal: PrincipalDep, session: SessionDep) -> MemberPublic:
    user = service.set_member(session, principal, project_id, body.username, body.role)
    return MemberPublic(user_id=user.id, username=user.username, role=body.role)
