"""Claims (backend/claims/service.py): a project's list and create; get, edit, delete and lock by the claim's
id alone (``/claims/{id}``: the CLI and SDK reach a claim of any project the caller sees); its versions,
comments and reviews."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, status

from backend.auth.dependencies import PrincipalDep
from backend.claims import service
from backend.claims.schemas import (
    ClaimCommentIn,
    ClaimCommentPublic,
    ClaimCreate,
    ClaimPage,
    ClaimPatch,
    ClaimPublic,
    ClaimReviewIn,
    ClaimReviewPublic,
    ClaimVersionPublic,
)
from backend.http.deps import Id, SessionDep

router = APIRouter(tags=["claims"])


@router.get("/projects/{project_id}/claims", response_model=ClaimPage, operation_id="claims-list")
def list_claims(
    project_id: Id,
    principal: PrincipalDep,
    session: SessionDep,
    limit: Annotated[
        int, Query(ge=1, le=service.LIST_MAX, description=f"claims a page holds, at most {service.LIST_MAX}")
    ] = service.LIST_DEFAULT,
    cursor: Annotated[
        str | None, Query(max_length=1000, description="next_cursor of the previous page")
    ] = None,
) -> ClaimPage:
    """A page of the project's claims by id, each evaluated on its runs now (any role in the project);
    ``next_cursor`` asks for the next (docs/api.md, Claims: the page's and the project's bounds)."""
    return service.list_claims(session, principal, project_id, limit, cursor)


@router.post(
    "/projects/{project_id}/claims",
    response_model=ClaimPublic,
    status_code=status.HTTP_201_CREATED,
    operation_id="claims-create",
)
def create_claim(
    project_id: Id, body: ClaimCreate, principal: PrincipalDep, session: SessionDep
) -> ClaimPublic:
    """State a claim (members and admins); a name already used in the project is 409, and so is a claim
    past the project's cap; a query or metric the runs list would refuse is 422 naming the field."""
    return service.create_claim(session, principal, project_id, body)


@router.get("/claims/{claim_id}", response_model=ClaimPublic, operation_id="claims-get")
def get_claim(claim_id: Id, principal: PrincipalDep, session: SessionDep) -> ClaimPublic:
    """A claim and its evaluation now; 404 for a claim of a project the caller is not in."""
    return service.get_claim(session, principal, claim_id)


@router.patch("/claims/{claim_id}", response_model=ClaimPublic, operation_id="claims-patch")
def patch_claim(claim_id: Id, body: ClaimPatch, principal: PrincipalDep, session: SessionDep) -> ClaimPublic:
    """Rename a claim or replace its definition: a changed definition is a new version (members)."""
    return service.update_claim(session, principal, claim_id, body)


@router.delete("/claims/{claim_id}", status_code=status.HTTP_204_NO_CONTENT, operation_id="claims-delete")
def delete_claim(claim_id: Id, principal: PrincipalDep, session: SessionDep) -> None:
    """Delete a claim (its author or a project admin)."""
    service.delete_claim(session, principal, claim_id)


@router.post("/claims/{claim_id}/lock", response_model=ClaimPublic, operation_id="claims-lock")
def lock_claim(claim_id: Id, principal: PrincipalDep, session: SessionDep) -> ClaimPublic:
    """Pre-register the current version (its hash and the time); 409 when it is locked already."""
    return service.lock_claim(session, principal, claim_id)


@router.get(
    "/claims/{claim_id}/versions", response_model=list[ClaimVersionPublic], operation_id="claims-versions"
)
def claim_versions(claim_id: Id, principal: PrincipalDep, session: SessionDep) -> list[ClaimVersionPublic]:
    return service.versions(session, principal, claim_id)


@router.get(
    "/claims/{claim_id}/comments", response_model=list[ClaimCommentPublic], operation_id="claims-comments"
)
def claim_comments(claim_id: Id, principal: PrincipalDep, session: SessionDep) -> list[ClaimCommentPublic]:
    return service.comments(session, principal, claim_id)


@router.post(
    "/claims/{claim_id}/comments",
    response_model=ClaimCommentPublic,
    status_code=status.HTTP_201_CREATED,
    operation_id="claims-comment",
)
def comment_claim(
    claim_id: Id, body: ClaimCommentIn, principal: PrincipalDep, session: SessionDep
) -> ClaimCommentPublic:
    return service.comment(session, principal, claim_id, body)


@router.put("/claims/{claim_id}/review", response_model=ClaimReviewPublic, operation_id="claims-review")
def review_claim(
    claim_id: Id, body: ClaimReviewIn, principal: PrincipalDep, session: SessionDep
) -> ClaimReviewPublic:
    """Approve a claim or request changes (members); every review is kept with the version it reviewed."""
    return service.review(session, principal, claim_id, body)


@router.get(
    "/claims/{claim_id}/reviews", response_model=list[ClaimReviewPublic], operation_id="claims-reviews"
)
def claim_reviews(claim_id: Id, principal: PrincipalDep, session: SessionDep) -> list[ClaimReviewPublic]:
    return service.reviews(session, principal, claim_id)
