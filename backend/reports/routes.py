"""Reports: a project's write-ups as typed blocks, their published revisions, comments anchored to blocks,
reviews of revisions, exports, and share links (the one route an anonymous reader may call is
``GET /shared/reports/{token}``). Each route hands the caller to the service, which checks its role."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response, status

from backend.auth.dependencies import PrincipalDep
from backend.http.deps import Id, SessionDep
from backend.reports import service
from backend.reports.data import BlockData
from backend.reports.schemas import (
    ExportFormat,
    PublishIn,
    ReportCommentIn,
    ReportCommentPublic,
    ReportCreate,
    ReportPublic,
    ReportReviewIn,
    ReportReviewPublic,
    ReportSummaryPage,
    ReportUpdate,
    RevisionPublic,
    RevisionSummary,
    ShareCreate,
    ShareCreated,
    SharedRevision,
    SharePublic,
)

router = APIRouter(tags=["reports"])
Number = Annotated[int, Path(ge=1, le=1_000_000, description="the revision's number")]
Token = Annotated[str, Path(min_length=8, max_length=200, pattern=r"^[A-Za-z0-9_-]+$")]


@router.get("/projects/{project_id}/reports", response_model=ReportSummaryPage, operation_id="reports-list")
def list_reports(
    project_id: Id,
    principal: PrincipalDep,
    session: SessionDep,
    limit: Annotated[
        int, Query(ge=1, le=service.LIST_MAX, description=f"reports a page holds, at most {service.LIST_MAX}")
    ] = service.LIST_DEFAULT,
    cursor: Annotated[
        str | None, Query(max_length=1000, description="next_cursor of the previous page")
    ] = None,
) -> ReportSummaryPage:
    """A page of the project's reports, newest first (any role); ``next_cursor`` asks for the next
    (docs/reports.md: the page's and the project's bounds)."""
    return service.list_reports(session, principal, project_id, limit, cursor)


@router.post(
    "/projects/{project_id}/reports",
    response_model=ReportPublic,
    status_code=status.HTTP_201_CREATED,
    operation_id="reports-create",
)
def create_report(
    project_id: Id, body: ReportCreate, principal: PrincipalDep, session: SessionDep
) -> ReportPublic:
    """Start a report (members); one past the project's cap is a 409."""
    return service.create_report(session, principal, project_id, body)


@router.get("/reports/{report_id}", response_model=ReportPublic, operation_id="reports-get")
def get_report(report_id: Id, principal: PrincipalDep, session: SessionDep) -> ReportPublic:
    return service.get_report(session, principal, report_id)


@router.put("/reports/{report_id}", response_model=ReportPublic, operation_id="reports-update")
def update_report(
    report_id: Id, body: ReportUpdate, principal: PrincipalDep, session: SessionDep
) -> ReportPublic:
    """Save the draft (the editor saves as you type): 409 when ``base_version`` is no longer the
    report's version, with what changed since in ``errors``."""
    return service.update_report(session, principal, report_id, body)


@router.delete("/reports/{report_id}", status_code=status.HTTP_204_NO_CONTENT, operation_id="reports-delete")
def delete_report(report_id: Id, principal: PrincipalDep, session: SessionDep) -> None:
    """Delete a report and its revisions (its author or a project admin)."""
    service.delete_report(session, principal, report_id)


@router.get("/reports/{report_id}/data", response_model=dict[str, BlockData], operation_id="reports-data")
def draft_data(report_id: Id, principal: PrincipalDep, session: SessionDep) -> dict[str, BlockData]:
    """The draft's data blocks, by block id: live ones as of now, frozen ones up to their cut-off."""
    return service.draft_data(session, principal, report_id)


@router.post(
    "/reports/{report_id}/publish",
    response_model=RevisionSummary,
    status_code=status.HTTP_201_CREATED,
    operation_id="reports-publish",
)
def publish(report_id: Id, body: PublishIn, principal: PrincipalDep, session: SessionDep) -> RevisionSummary:
    return service.publish(session, principal, report_id, body)


@router.get(
    "/reports/{report_id}/revisions", response_model=list[RevisionSummary], operation_id="reports-revisions"
)
def list_revisions(report_id: Id, principal: PrincipalDep, session: SessionDep) -> list[RevisionSummary]:
    return service.list_revisions(session, principal, report_id)


@router.get(
    "/reports/{report_id}/revisions/{number}", response_model=RevisionPublic, operation_id="reports-revision"
)
def get_revision(
    report_id: Id, number: Number, principal: PrincipalDep, session: SessionDep
) -> RevisionPublic:
    return service.get_revision(session, principal, report_id, number)


@router.get(
    "/reports/{report_id}/revisions/{number}/export",
    response_class=Response,
    operation_id="reports-export",
    responses={
        200: {
            "description": "html: one self-contained page; md and latex: a zip",
            "content": {"text/html": {}, "application/zip": {}},
        }
    },
)
def export_revision(
    report_id: Id,
    number: Number,
    principal: PrincipalDep,
    session: SessionDep,
    format: Annotated[ExportFormat, Query()] = "html",
) -> Response:
    file = service.export_revision(session, principal, report_id, number, format)
    return Response(
        file.content,
        media_type=file.media_type,
        headers={"Content-Disposition": f'attachment; filename="{file.filename}"'},
    )


@router.get(
    "/reports/{report_id}/comments", response_model=list[ReportCommentPublic], operation_id="reports-comments"
)
def comments(report_id: Id, principal: PrincipalDep, session: SessionDep) -> list[ReportCommentPublic]:
    return service.comments(session, principal, report_id)


@router.post(
    "/reports/{report_id}/comments",
    response_model=ReportCommentPublic,
    status_code=status.HTTP_201_CREATED,
    operation_id="reports-comment",
)
def comment(
    report_id: Id, body: ReportCommentIn, principal: PrincipalDep, session: SessionDep
) -> ReportCommentPublic:
    return service.comment(session, principal, report_id, body)


@router.get(
    "/reports/{report_id}/reviews", response_model=list[ReportReviewPublic], operation_id="reports-reviews"
)
def reviews(report_id: Id, principal: PrincipalDep, session: SessionDep) -> list[ReportReviewPublic]:
    return service.reviews(session, principal, report_id)


@router.post(
    "/reports/{report_id}/revisions/{number}/reviews",
    response_model=ReportReviewPublic,
    status_code=status.HTTP_201_CREATED,
    operation_id="reports-review",
)
def review(
    report_id: Id, number: Number, body: ReportReviewIn, principal: PrincipalDep, session: SessionDep
) -> ReportReviewPublic:
    """Approve a published revision, or request changes to it."""
    return service.review(session, principal, report_id, number, body)


@router.post(
    "/reports/{report_id}/revisions/{number}/shares",
    response_model=ShareCreated,
    status_code=status.HTTP_201_CREATED,
    operation_id="reports-share",
)
def share(
    report_id: Id, number: Number, body: ShareCreate, principal: PrincipalDep, session: SessionDep
) -> ShareCreated:
    """A read-only link to this revision for a reader without an account: its token is shown once."""
    return service.create_share(session, principal, report_id, number, body)


@router.get("/reports/{report_id}/shares", response_model=list[SharePublic], operation_id="reports-shares")
def shares(report_id: Id, principal: PrincipalDep, session: SessionDep) -> list[SharePublic]:
    return service.list_shares(session, principal, report_id)


@router.delete(
    "/reports/{report_id}/shares/{share_id}", response_model=SharePublic, operation_id="reports-revoke_share"
)
def revoke_share(report_id: Id, share_id: Id, principal: PrincipalDep, session: SessionDep) -> SharePublic:
    return service.revoke_share(session, principal, report_id, share_id)


@router.get("/shared/reports/{token}", response_model=SharedRevision, operation_id="reports-shared")
def shared(token: Token, session: SessionDep) -> SharedRevision:
    """What a share link opens, without an account: one revision, and nothing else."""
    return service.shared(session, token)
