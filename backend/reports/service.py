"""Reports: any project role reads them, members write, publish, comment, review and share, and only a
report's author or a project admin deletes one. A report is reached by its id alone; one of a project the
caller is not in answers 404 as a missing one does. Nothing here commits (the request's session does).

Frozen blocks take their cut-off when they are saved frozen without one, and a frozen block over runs
keeps the data it shows then (backend/reports/kept.py), which the draft serves while the block keeps that
cut-off; publishing copies the blocks and every block's data, as the draft shows it, into an immutable
revision, so a revision renders what it showed then. A share link opens one revision to a reader without an
account, and nothing else.

A project holds at most ``MAX_REPORTS`` reports (one more is a 409), and the list answers a page of at
most ``LIST_MAX`` of them, newest first (a keyset ``cursor`` on the id)."""

from __future__ import annotations

import hashlib
import json
import secrets
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter
from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from backend import db
from backend.activity import feed
from backend.auth.security import hash_api_token
from backend.db import utcnow
from backend.errors import Conflict, Forbidden, Invalid, NotFound
from backend.models import Report, ReportComment, ReportReview, ReportRevision, ReportShare
from backend.projects import service as projects
from backend.projects.service import MAX_COMMENTS, MAX_REVIEWS, MAX_REVISIONS, MAX_SHARES
from backend.query import listing
from backend.reports import kept, repository, resolve
from backend.reports.blocks import TYPES
from backend.reports.blocks.base import BlockBase, DataBlock, FreezableBlock
from backend.reports.data import BlockData
from backend.reports.render import export as exporter
from backend.reports.render.context import ResolveContext
from backend.reports.schemas import (
    Block,
    PublishIn,
    ReportCommentIn,
    ReportCommentPublic,
    ReportCreate,
    ReportPublic,
    ReportReviewIn,
    ReportReviewPublic,
    ReportSummary,
    ReportSummaryPage,
    ReportUpdate,
    RevisionPublic,
    RevisionSummary,
    ShareCreate,
    ShareCreated,
    SharedRevision,
    SharePublic,
)

if TYPE_CHECKING:
    from backend.auth.principal import Principal

_BLOCKS: TypeAdapter[list[Block]] = TypeAdapter(list[Block])
SHARE_PREFIX = "rlshare_"
MAX_REPORTS = 500  # reports a project may hold
_NEW_REPORT = "start a new report to go on"


def _revision_ids(report: Report) -> Select[int]:
    return select(ReportRevision.id).where(ReportRevision.report_id == report.id)


LIST_DEFAULT = 100  # reports a list page holds unless ``limit`` says otherwise
LIST_MAX = 500  # the largest ``limit``: a project's every report in one page


def _blocks(stored: list[Any]) -> list[BlockBase]:
    return list(_BLOCKS.validate_python(stored))


def _dump(blocks: list[BlockBase]) -> list[Any]:
    return [b.model_dump(mode="json") for b in blocks]


def _name(user: Any) -> str | None:
    return user.username if user is not None else None


def _user_id(principal: Principal) -> int | None:
    return principal.user.id if principal.user is not None else None


# ------------------------------------------------------------------------------------------- access


def _get(session: Session, principal: Principal, report_id: int, minimum: str) -> tuple[Report, str]:
    report = session.get(Report, report_id)
    if report is None:
        raise NotFound(f"report {report_id} not found")
    role = projects.require_role(session, principal, report.project_id, minimum, f"report {report_id}")
    return report, role


def _public(session: Session, report: Report, role: str) -> ReportPublic:
    return ReportPublic(
        id=report.id,
        project_id=report.project_id,
        title=report.title,
        version=report.version,
        blocks=_blocks(report.blocks),
        author=_name(report.author),
        created_at=report.created_at,
        updated_at=report.updated_at,
        revisions=repository.last_revision_number(session, report.id),
        can_edit=role in ("member", "admin"),
    )


def list_reports(
    session: Session, principal: Principal, project_id: int, limit: int, cursor: str | None
) -> ReportSummaryPage:
    """A page of the project's reports, newest first; ``cursor`` the previous page's ``next_cursor``
    (Invalid, a 422 at ``["query", "cursor"]``, for anything else)."""
    projects.require_role(session, principal, project_id, "viewer", f"project {project_id}")
    rows = repository.page(session, project_id, listing.after_id(cursor), limit + 1)
    return ReportSummaryPage(
        items=[
            ReportSummary(
                id=r.id,
                project_id=r.project_id,
                title=r.title,
                version=r.version,
                author=r.author,
                updated_at=r.updated_at,
                revisions=r.revisions,
            )
            for r in rows[:limit]
        ],
        next_cursor=listing.next_after_id(rows, limit),
    )


def get_report(session: Session, principal: Principal, report_id: int) -> ReportPublic:
    report, role = _get(session, principal, report_id, "viewer")
    return _public(session, report, role)


# ------------------------------------------------------------------------------------------- writes


def _context(session: Session, project_id: int) -> ResolveContext:
    return ResolveContext(session=session, project_id=project_id, now=utcnow())


def _prepare(ctx: ResolveContext, blocks: list[BlockBase]) -> tuple[list[BlockBase], set[str]]:
    """Check each data block's query (422 at its path), drop a live block's cut-off and take one for a
    frozen block that has none (a run block's or a claim block's); with the ids of the blocks frozen now."""
    out: list[BlockBase] = []
    frozen_now: set[str] = set()
    for i, block in enumerate(blocks):
        if isinstance(block, DataBlock) and block.source.query is not None and block.source.query.strip():
            resolve.check_query(ctx, block.source.query, ["body", "blocks", i, block.type, "source", "query"])
        if isinstance(block, FreezableBlock):
            freeze = TYPES[block.type].freeze
            if block.mode == "live":
                block = block.model_copy(update={"cutoff": None})
            elif block.cutoff is None and freeze is not None:
                block = block.model_copy(update={"cutoff": freeze(ctx, block)})
                frozen_now.add(block.id)
        out.append(block)
    return out, frozen_now


def create_report(
    session: Session, principal: Principal, project_id: int, body: ReportCreate
) -> ReportPublic:
    role = projects.require_role(session, principal, project_id, "member", f"project {project_id}")
    ctx = _context(session, project_id)
    blocks, frozen_now = _prepare(ctx, list(body.blocks))
    projects.lock_for_cap(session, project_id)
    report = Report(
        project_id=project_id,
        title=body.title,
        blocks=_dump(blocks),
        version=1,
        author_id=_user_id(principal),
        created_at=ctx.now,
        updated_at=ctx.now,
    )
    session.add(report)
    session.flush()
    projects.check_cap(
        project_id, repository.count(session, project_id), MAX_REPORTS, "reports", "create another"
    )
    kept.keep(ctx, report.id, blocks, frozen_now)
    feed.record(
        session,
        project_id,
        "report_created",
        f"{principal.name} created report {report.title!r}",
        actor_id=_user_id(principal),
    )
    return _public(session, report, role)


def _stale(report: Report, base_version: int, blocks: list[Any] | None) -> Conflict:
    """409 for an edit made on an older version: what changed since, block by block (by id), so the
    editor can show it."""
    current = {b["id"]: b for b in report.blocks}
    errors: list[dict[str, Any]] = []
    if blocks is not None:
        mine = {b["id"]: b for b in blocks}
        for block_id, block in current.items():
            if block_id not in mine:
                errors.append({"loc": ["blocks", block_id], "msg": "added or kept since", "type": "stale"})
            elif mine[block_id] != block:
                errors.append(
                    {"loc": ["blocks", block_id], "msg": "differs from the saved version", "type": "stale"}
                )
        for block_id in mine.keys() - current.keys():
            errors.append({"loc": ["blocks", block_id], "msg": "not in the saved version", "type": "stale"})
    return Conflict(
        f"the report changed since version {base_version}: it is at version {report.version}; "
        "reload it and apply your edit again",
        [
            {"loc": ["body", "base_version"], "msg": f"current version is {report.version}", "type": "stale"},
            *errors,
        ],
    )


def update_report(session: Session, principal: Principal, report_id: int, body: ReportUpdate) -> ReportPublic:
    report, role = _get(session, principal, report_id, "member")
    if body.base_version != report.version:
        raise _stale(report, body.base_version, _dump(list(body.blocks)))
    ctx = _context(session, report.project_id)
    blocks, frozen_now = _prepare(ctx, list(body.blocks))
    report.title = body.title
    report.blocks = _dump(blocks)
    report.version += 1
    report.updated_at = ctx.now
    session.flush()
    kept.keep(ctx, report.id, blocks, frozen_now)
    return _public(session, report, role)


def delete_report(session: Session, principal: Principal, report_id: int) -> None:
    report, role = _get(session, principal, report_id, "member")
    if role != "admin" and report.author_id != _user_id(principal):
        raise Forbidden("only the report's author or a project admin may delete it")
    session.delete(report)
    session.flush()


# ------------------------------------------------------------------------------------------ data


def _resolve_live(ctx: ResolveContext, blocks: list[BlockBase]) -> dict[str, BlockData]:
    """The live blocks' data, as the runs are now."""
    out: dict[str, BlockData] = {}
    for block in blocks:
        kind = TYPES[block.type]
        if kind.resolve is None or not (isinstance(block, FreezableBlock) and block.mode == "live"):
            continue
        out[block.id] = kind.resolve(ctx, block)
    return out


def draft_data(session: Session, principal: Principal, report_id: int) -> dict[str, BlockData]:
    """Every data block of the draft: a live one as the runs are now, a frozen one as kept when it was
    frozen (without kept data: read again up to its cut-off, and saying so)."""
    report, _ = _get(session, principal, report_id, "viewer")
    return kept.block_data(_context(session, report.project_id), report.id, _blocks(report.blocks))


def _hash(title: str, blocks: list[Any], data: dict[str, Any]) -> str:
    canonical = json.dumps(
        {"title": title, "blocks": blocks, "data": data}, sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def publish(session: Session, principal: Principal, report_id: int, body: PublishIn) -> RevisionSummary:
    """An immutable revision of the draft at ``base_version``: its blocks (a frozen block without a
    cut-off frozen now) and the data of every block as the draft shows it now (a frozen block's as kept
    when it was frozen)."""
    report, _ = _get(session, principal, report_id, "member")
    if body.base_version != report.version:
        raise _stale(report, body.base_version, None)
    ctx = _context(session, report.project_id)
    blocks, frozen_now = _prepare(ctx, _blocks(report.blocks))
    stored = _dump(blocks)
    data = {
        k: v.model_dump(mode="json")
        for k, v in kept.block_data(ctx, report.id, blocks, fresh=frozen_now).items()
    }
    db.lock_row(session, Report.id, report.id)
    revision = ReportRevision(
        report_id=report.id,
        number=repository.last_revision_number(session, report.id) + 1,
        title=report.title,
        blocks=stored,
        data=data,
        content_hash=_hash(report.title, stored, data),
        author_id=_user_id(principal),
        created_at=ctx.now,
    )
    session.add(revision)
    session.flush()
    held = db.count_rows(session, ReportRevision, ReportRevision.report_id == report.id)
    projects.check_held(
        held, MAX_REVISIONS, f"report {report.id}", "revisions", ["path", "report_id"], _NEW_REPORT
    )
    feed.record(
        session,
        report.project_id,
        "report_published",
        f"{principal.name} published revision {revision.number} of report {report.title!r}",
        actor_id=_user_id(principal),
    )
    return _revision_summary(revision)


def _revision_summary(revision: ReportRevision, hide_authors: bool = False) -> RevisionSummary:
    return RevisionSummary(
        report_id=revision.report_id,
        number=revision.number,
        title=revision.title,
        content_hash=revision.content_hash,
        author=None if hide_authors else _name(revision.author),
        created_at=revision.created_at,
    )


def list_revisions(session: Session, principal: Principal, report_id: int) -> list[RevisionSummary]:
    report, _ = _get(session, principal, report_id, "viewer")
    return [_revision_summary(r) for r in repository.revisions(session, report.id)]


def _revision(session: Session, report: Report, number: int) -> ReportRevision:
    revision = repository.revision(session, report.id, number)
    if revision is None:
        raise NotFound(f"revision {number} of report {report.id} not found")
    return revision


def _revision_data(
    session: Session, report: Report, revision: ReportRevision
) -> tuple[list[BlockBase], dict[str, BlockData]]:
    """The revision's blocks and data: frozen blocks as kept, live ones resolved again now."""
    blocks = _blocks(revision.blocks)
    data = {k: BlockData.model_validate(v) for k, v in revision.data.items()}
    data.update(_resolve_live(_context(session, report.project_id), blocks))
    return blocks, data


def get_revision(session: Session, principal: Principal, report_id: int, number: int) -> RevisionPublic:
    report, _ = _get(session, principal, report_id, "viewer")
    revision = _revision(session, report, number)
    blocks, data = _revision_data(session, report, revision)
    return RevisionPublic(**_revision_summary(revision).model_dump(), blocks=blocks, data=data)


def export_revision(
    session: Session, principal: Principal, report_id: int, number: int, fmt: str
) -> exporter.ExportFile:
    report, _ = _get(session, principal, report_id, "viewer")
    revision = _revision(session, report, number)
    blocks, data = _revision_data(session, report, revision)
    doc = exporter.Document(
        title=revision.title,
        number=revision.number,
        content_hash=revision.content_hash,
        author=_name(revision.author),
        published_at=revision.created_at,
        blocks=blocks,
        data=data,
    )
    return exporter.export(doc, fmt)


# -------------------------------------------------------------------------------- comments and reviews


def _comment_public(c: ReportComment) -> ReportCommentPublic:
    return ReportCommentPublic(
        id=c.id,
        report_id=c.report_id,
        block_id=c.block_id,
        author=_name(c.author),
        body=c.body,
        created_at=c.created_at,
    )


def comments(session: Session, principal: Principal, report_id: int) -> list[ReportCommentPublic]:
    report, _ = _get(session, principal, report_id, "viewer")
    return [_comment_public(c) for c in repository.comments(session, report.id)]


def comment(
    session: Session, principal: Principal, report_id: int, body: ReportCommentIn
) -> ReportCommentPublic:
    report, _ = _get(session, principal, report_id, "member")
    if body.block_id not in {b["id"] for b in report.blocks}:
        raise Invalid(
            f"block_id: the report has no block {body.block_id!r}",
            [{"loc": ["body", "block_id"], "msg": "no block of the report has this id", "type": "not_found"}],
        )
    db.lock_row(session, Report.id, report.id)
    row = ReportComment(
        report_id=report.id, block_id=body.block_id, author_id=_user_id(principal), body=body.body
    )
    session.add(row)
    session.flush()
    held = db.count_rows(session, ReportComment, ReportComment.report_id == report.id)
    projects.check_held(
        held, MAX_COMMENTS, f"report {report.id}", "comments", ["path", "report_id"], _NEW_REPORT
    )
    feed.record(
        session,
        report.project_id,
        "report_commented",
        f"{principal.name} commented on a block of report {report.title!r}",
        actor_id=_user_id(principal),
    )
    session.flush()
    return _comment_public(row)


def _review_public(r: ReportReview, report_id: int, number: int) -> ReportReviewPublic:
    return ReportReviewPublic(
        id=r.id,
        report_id=report_id,
        revision=number,
        reviewer=_name(r.reviewer),
        state=r.state,
        body=r.body,
        created_at=r.created_at,
    )


def reviews(session: Session, principal: Principal, report_id: int) -> list[ReportReviewPublic]:
    report, _ = _get(session, principal, report_id, "viewer")
    return [_review_public(r, report.id, n) for r, n in repository.reviews(session, report.id)]


def review(
    session: Session, principal: Principal, report_id: int, number: int, body: ReportReviewIn
) -> ReportReviewPublic:
    report, _ = _get(session, principal, report_id, "member")
    revision = _revision(session, report, number)
    db.lock_row(session, Report.id, report.id)
    row = ReportReview(
        revision_id=revision.id, reviewer_id=_user_id(principal), state=body.state, body=body.body
    )
    session.add(row)
    session.flush()
    held = db.count_rows(session, ReportReview, ReportReview.revision_id.in_(_revision_ids(report)))
    projects.check_held(
        held, MAX_REVIEWS, f"report {report.id}", "reviews", ["path", "report_id"], _NEW_REPORT
    )
    label = "approved" if body.state == "approved" else "requested changes on"
    feed.record(
        session,
        report.project_id,
        "report_reviewed",
        f"{principal.name} {label} revision {number} of report {report.title!r}",
        actor_id=_user_id(principal),
    )
    session.flush()
    return _review_public(row, report.id, number)


# ------------------------------------------------------------------------------------------ sharing


def _share_public(share: ReportShare, report_id: int) -> SharePublic:
    return SharePublic(
        id=share.id,
        report_id=report_id,
        revision=share.revision.number,
        prefix=share.prefix,
        hide_authors=share.hide_authors,
        expires_at=share.expires_at,
        revoked_at=share.revoked_at,
        created_by=_name(share.created_by),
        created_at=share.created_at,
    )


def create_share(
    session: Session, principal: Principal, report_id: int, number: int, body: ShareCreate
) -> ShareCreated:
    report, _ = _get(session, principal, report_id, "member")
    revision = _revision(session, report, number)
    token = SHARE_PREFIX + secrets.token_urlsafe(32)
    now = utcnow()
    db.lock_row(session, Report.id, report.id)
    share = ReportShare(
        revision_id=revision.id,
        token_hash=hash_api_token(token),
        prefix=token[: len(SHARE_PREFIX) + 4],
        hide_authors=body.hide_authors,
        expires_at=now + timedelta(days=body.expires_in_days),
        created_by_id=_user_id(principal),
        created_at=now,
    )
    session.add(share)
    session.flush()
    held = db.count_rows(session, ReportShare, ReportShare.revision_id.in_(_revision_ids(report)))
    projects.check_held(
        held, MAX_SHARES, f"report {report.id}", "share links", ["path", "report_id"], _NEW_REPORT
    )
    feed.record(
        session,
        report.project_id,
        "report_shared",
        f"{principal.name} shared revision {number} of report {report.title!r} by a link",
        actor_id=_user_id(principal),
    )
    return ShareCreated(**_share_public(share, report.id).model_dump(), token=token)


def list_shares(session: Session, principal: Principal, report_id: int) -> list[SharePublic]:
    report, _ = _get(session, principal, report_id, "member")
    return [_share_public(s, report.id) for s in repository.shares(session, report.id)]


def revoke_share(session: Session, principal: Principal, report_id: int, share_id: int) -> SharePublic:
    report, _ = _get(session, principal, report_id, "member")
    share = session.get(ReportShare, share_id)
    if share is None or share.revision.report_id != report.id:
        raise NotFound(f"share link {share_id} of report {report_id} not found")
    if share.revoked_at is None:
        share.revoked_at = utcnow()
        session.flush()
    return _share_public(share, report.id)


def shared(session: Session, token: str) -> SharedRevision:
    """The revision a share link opens, as it was published (live blocks included: as of publishing),
    for a reader without an account. A link unknown, expired or revoked answers one 404."""
    share = (
        repository.share_by_hash(session, hash_api_token(token)) if token.startswith(SHARE_PREFIX) else None
    )
    if share is None or share.revoked_at is not None or share.expires_at <= utcnow():
        raise NotFound("this link does not exist, has expired or was revoked")
    revision = share.revision
    return SharedRevision(
        title=revision.title,
        number=revision.number,
        content_hash=revision.content_hash,
        author=None if share.hide_authors else _name(revision.author),
        published_at=revision.created_at,
        expires_at=share.expires_at,
        blocks=_blocks(revision.blocks),
        data={k: BlockData.model_validate(v) for k, v in revision.data.items()},
    )
