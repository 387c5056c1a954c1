"""All queries of the reports domain: reports, revisions, comments, reviews, share links, the data kept
for drafts' frozen blocks, and the runs, series heads and results a block reads (always within the
report's project)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, delete, func, select
from sqlalchemy.orm import Session

from backend.models import (
    Metric,
    MetricLatest,
    Report,
    ReportComment,
    ReportFrozenData,
    ReportReview,
    ReportRevision,
    ReportShare,
    Result,
    Run,
    User,
)


def page(session: Session, project_id: int, before_id: int | None, limit: int) -> list[Any]:
    """Up to ``limit`` of the project's reports with an id below ``before_id`` (a keyset page), newest
    first: each row's id, project_id, title, version, author (a username), updated_at and revisions (its
    last revision's number, 0 before the first), in one statement that leaves the blocks unread."""
    revisions = (
        select(func.coalesce(func.max(ReportRevision.number), 0))
        .where(ReportRevision.report_id == Report.id)
        .scalar_subquery()
    )
    stmt = (
        select(
            Report.id,
            Report.project_id,
            Report.title,
            Report.version,
            User.username.label("author"),
            Report.updated_at,
            revisions.label("revisions"),
        )
        .outerjoin(User, User.id == Report.author_id)
        .where(Report.project_id == project_id)
    )
    if before_id is not None:
        stmt = stmt.where(Report.id < before_id)
    return list(session.execute(stmt.order_by(Report.id.desc()).limit(limit)))


def count(session: Session, project_id: int) -> int:
    return int(session.scalar(select(func.count(Report.id)).where(Report.project_id == project_id)) or 0)


def revisions(session: Session, report_id: int) -> list[ReportRevision]:
    stmt = select(ReportRevision).where(ReportRevision.report_id == report_id).order_by(ReportRevision.number)
    return list(session.scalars(stmt))


def revision(session: Session, report_id: int, number: int) -> ReportRevision | None:
    stmt = select(ReportRevision).where(
        ReportRevision.report_id == report_id, ReportRevision.number == number
    )
    return session.scalars(stmt).one_or_none()


def last_revision_number(session: Session, report_id: int) -> int:
    numbers = session.scalars(select(ReportRevision.number).where(ReportRevision.report_id == report_id))
    return max(numbers, default=0)


def comments(session: Session, report_id: int) -> list[ReportComment]:
    stmt = select(ReportComment).where(ReportComment.report_id == report_id).order_by(ReportComment.id)
    return list(session.scalars(stmt))


def reviews(session: Session, report_id: int) -> list[tuple[ReportReview, int]]:
    """Every review of the report's revisions, with its revision's number."""
    stmt = (
        select(ReportReview, ReportRevision.number)
        .join(ReportRevision, ReportRevision.id == ReportReview.revision_id)
        .where(ReportRevision.report_id == report_id)
        .order_by(ReportReview.id)
    )
    return [(r, int(n)) for r, n in session.execute(stmt)]


def shares(session: Session, report_id: int) -> list[ReportShare]:
    stmt = (
        select(ReportShare)
        .join(ReportRevision, ReportRevision.id == ReportShare.revision_id)
        .where(ReportRevision.report_id == report_id)
        .order_by(ReportShare.id)
    )
    return list(session.scalars(stmt))


def share_by_hash(session: Session, token_hash: str) -> ReportShare | None:
    return session.scalars(select(ReportShare).where(ReportShare.token_hash == token_hash)).one_or_none()


def frozen_data_keys(session: Session, report_id: int) -> list[tuple[int, str, str, int, bool]]:
    """The report's kept rows without their data: (id, block id, key hash, size, whether data is kept)."""
    stmt = select(
        ReportFrozenData.id,
        ReportFrozenData.block_id,
        ReportFrozenData.key_hash,
        ReportFrozenData.size,
        ReportFrozenData.data.is_not(None),
    ).where(ReportFrozenData.report_id == report_id)
    return [(int(i), b, h, int(n), bool(k)) for i, b, h, n, k in session.execute(stmt)]


def frozen_data(session: Session, report_id: int, block_ids: Sequence[str]) -> dict[str, ReportFrozenData]:
    """The kept rows of these blocks of the report, by block id."""
    if not block_ids:
        return {}
    stmt = select(ReportFrozenData).where(
        ReportFrozenData.report_id == report_id, ReportFrozenData.block_id.in_(list(block_ids))
    )
    return {r.block_id: r for r in session.scalars(stmt)}


def delete_frozen_data(session: Session, ids: Sequence[int]) -> None:
    if ids:
        session.execute(delete(ReportFrozenData).where(ReportFrozenData.id.in_(list(ids))))


# ------------------------------------------------------------------------------------- what blocks read


def runs_matching(session: Session, project_id: int, condition: ColumnElement[bool], limit: int) -> list[Run]:
    """The project's runs a query selects, newest first."""
    stmt = select(Run).where(Run.project_id == project_id, condition).order_by(Run.id.desc()).limit(limit)
    return list(session.scalars(stmt))


def runs_by_id(session: Session, run_ids: Sequence[int]) -> dict[int, Run]:
    if not run_ids:
        return {}
    return {r.id: r for r in session.scalars(select(Run).where(Run.id.in_(list(run_ids))))}


def latest(
    session: Session, run_ids: Sequence[int], keys: Sequence[str] | None
) -> dict[int, dict[str, tuple[int, int, Any]]]:
    """run -> key -> (last step, row version, latest value) from metric_latest; every key when ``keys`` is
    None."""
    if not run_ids:
        return {}
    stmt = select(
        MetricLatest.run_id, MetricLatest.key, MetricLatest.step, MetricLatest.rev, MetricLatest.value
    ).where(MetricLatest.run_id.in_(list(run_ids)))
    if keys is not None:
        stmt = stmt.where(MetricLatest.key.in_(list(keys)))
    out: dict[int, dict[str, tuple[int, int, Any]]] = {}
    for run_id, key, step, rev, value in session.execute(stmt):
        out.setdefault(int(run_id), {})[key] = (int(step), int(rev), value)
    return out


def results(session: Session, run_ids: Sequence[int], kind: str, limit: int) -> list[Result]:
    if not run_ids:
        return []
    stmt = (
        select(Result)
        .where(Result.run_id.in_(list(run_ids)), Result.kind == kind)
        .order_by(Result.run_id, Result.id)
        .limit(limit)
    )
    return list(session.scalars(stmt))


def value_at(session: Session, run_id: int, key: str, step: int) -> tuple[int, Any] | None:
    """The series' last point at or before ``step``: (its step, its value)."""
    stmt = (
        select(Metric.step, Metric.value)
        .where(Metric.run_id == run_id, Metric.key == key, Metric.step <= step)
        .order_by(Metric.step.desc())
        .limit(1)
    )
    row = session.execute(stmt).first()
    return None if row is None else (int(row[0]), row[1])
