"""Projects, memberships and the role checks every domain uses.

A resource of a project the caller is not a member of answers 404, so its existence is not revealed;
a member whose role is too low gets 403.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from backend import errors
from backend.auth import repository as auth_repo
from backend.auth import service as auth_service
from backend.errors import Conflict, Forbidden, Invalid, NotFound
from backend.models import ROLES, Membership, Project, User
from backend.projects import repository

if TYPE_CHECKING:
    from backend.auth.principal import Principal

ROLE_RANK = {role: i for i, role in enumerate(ROLES)}  # viewer < member < admin
DEFAULT_PROJECT = "default"


def get_or_create_project(session: Session, name: str, description: str = "") -> Project:
    project = repository.by_name(session, name)
    if project is None:
        project = Project(name=name, description=description)
        session.add(project)
        session.flush()
    return project


def create_member(
    session: Session,
    username: str,
    password: str,
    *,
    is_admin: bool = False,
    project: str | None = "default",
    role: str = "member",
) -> User:
    """A new user (``backend.auth.service.create_user``: its policy applies) with ``role`` in ``project``
    (created if missing; a site admin is its admin), or in no project when ``project`` is None."""
    user = auth_service.create_user(session, username, password, is_admin=is_admin)
    if project is not None:
        proj = get_or_create_project(session, project)
        session.add(Membership(project_id=proj.id, user_id=user.id, role="admin" if is_admin else role))
        session.flush()
    return user


def create_project(session: Session, principal: Principal, name: str, description: str) -> Project:
    if not principal.is_admin:
        raise Forbidden("only a site admin can create projects")
    if repository.by_name(session, name) is not None:
        raise Conflict(f"project {name!r} already exists")
    project = Project(name=name, description=description)
    session.add(project)
    session.flush()
    assert principal.user is not None
    session.add(Membership(project_id=project.id, user_id=principal.user.id, role="admin"))
    session.flush()
    return project


def role_in(session: Session, principal: Principal, project_id: int) -> str | None:
    """The caller's effective role in a project (site admins are admins everywhere; workers read)."""
    if principal.is_admin:
        return "admin"
    if principal.is_worker or principal.is_run:
        return "worker"
    assert principal.user is not None
    return repository.role_of(session, project_id, principal.user.id)


def require_role(session: Session, principal: Principal, project_id: int, minimum: str, what: str) -> str:
    """Raise NotFound (not a member) or Forbidden (role too low) unless the caller may act."""
    role = role_in(session, principal, project_id)
    if role is None:
        raise NotFound(f"{what} not found")
    if role == "worker":
        if minimum == "viewer":
            return role
        raise Forbidden("a worker's or a run's token may only run its runs and read them")
    if ROLE_RANK[role] < ROLE_RANK[minimum]:
        raise Forbidden(f"your role in this project is {role}; this needs {minimum}")
    return role


def resolve_project(session: Session, principal: Principal, name: str | None) -> Project:
    project = repository.by_name(session, name or DEFAULT_PROJECT)
    if project is None:
        raise Invalid(
            f"project {name!r} does not exist",
            [{"loc": ["body", "project"], "msg": f"project {name!r} does not exist", "type": "not_found"}],
        )
    require_role(session, principal, project.id, "viewer", f"project {project.name!r}")
    return project


def listed_project_ids(session: Session, principal: Principal, project: str | None) -> list[int] | None:
    """The projects a list of runs or experiments covers: ``project`` (a viewer of it at least), else every
    project for a site admin (None: no filter), else the caller's own."""
    if project is not None:
        return [resolve_project(session, principal, project).id]
    if principal.is_admin:
        return None
    assert principal.user is not None
    return repository.visible_project_ids(session, principal.user.id)


def visible_projects(session: Session, principal: Principal) -> list[tuple[Project, str]]:
    if principal.is_worker or principal.is_run:
        return []
    if principal.is_admin:
        return [(p, "admin") for p in repository.all_projects(session)]
    assert principal.user is not None
    return auth_repo.memberships_of(session, principal.user.id)


def set_member(session: Session, principal: Principal, project_id: int, username: str, role: str) -> User:
    """Give ``username`` a role in the project (project admins and site admins).

    A project admin cannot change a site admin's membership (no demoting the site admin), and an
    unknown username answers as a site admin's does, so the route tells a project admin nothing about
    accounts beyond those it can manage."""
    require_role(session, principal, project_id, "admin", f"project {project_id}")
    if role not in ROLE_RANK:
        raise Invalid(
            f"role must be one of {', '.join(ROLES)}",
            [{"loc": ["body", "role"], "msg": f"must be one of {', '.join(ROLES)}", "type": "enum"}],
        )
    user = auth_repo.user_by_name(session, username)
    if not principal.is_admin and (user is None or user.is_admin):
        raise Forbidden(
            f"cannot set {username!r}: no such user, or a site admin (only site admins change theirs)"
        )
    if user is None:
        raise NotFound(f"user {username!r} not found")
    m = session.get(Membership, (project_id, user.id))
    if m is None:
        session.add(Membership(project_id=project_id, user_id=user.id, role=role))
    else:
        m.role = role
    session.flush()
    return user


def members(session: Session, principal: Principal, project_id: int) -> list[tuple[User, str]]:
    """The project's members and their roles, for anyone who may view the project."""
    require_role(session, principal, project_id, "viewer", f"project {project_id}")
    return repository.members(session, project_id)


def lock_for_cap(session: Session, project_id: int) -> None:
    """Take the project's row before adding to a capped collection (``check_cap`` after the insert)."""
    repository.lock_for_cap(session, project_id)


# What one object may hold: beyond it a 409 ``<sort>_full`` (docs/api.md, Limits). Every list of them is then
# bounded without paging: a run's or an experiment's comments, a claim's versions, a report's shares.
MAX_COMMENTS = 1_000  # per run, experiment, claim, report
MAX_REVIEWS = 1_000  # per experiment, claim, report
MAX_TAGS = 100  # per run, experiment
MAX_VERSIONS = 1_000  # per claim
MAX_REVISIONS = 1_000  # per report
MAX_SHARES = 100  # per report
MAX_VIEWS = 500  # per project
MAX_SECRETS = 100  # per project


def check_held(held: int, cap: int, owner: str, things: str, loc: list[str | int], then: str) -> None:
    """409 ``<sort>_full`` (``run_full`` for ``owner`` "run 7") when one object holds more than ``cap``
    ``things`` counting the one just flushed, counted under the owner's ``db.lock_row``."""
    sort = owner.split()[0]
    errors.check_room(held, cap, owner=owner, per=f"a {sort}", things=things, loc=loc, kind=sort, then=then)


def check_cap(project_id: int, held: int, cap: int, things: str, then: str) -> None:
    """409 ``project_full`` when the project holds more than ``cap`` ``things`` counting the one just
    flushed (``errors.check_room``, under ``lock_for_cap``). ``then``: what deleting one allows ("state
    another")."""
    errors.check_room(
        held,
        cap,
        owner=f"project {project_id}",
        per="a project",
        things=things,
        loc=["path", "project_id"],
        kind="project",
        then=f"delete one to {then}",
    )
