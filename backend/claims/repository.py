"""All queries on claims, their versions, reviews and comments, and the SQL that evaluates a claim: per arm,
one value per run (a subquery), its count, sum and sum of squares, and for a paired test the per-seed
differences' count, sum and sum of squares: the database does the arithmetic, Python the distributions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Subquery, and_, func, or_, select
from sqlalchemy.orm import Session, aliased

from backend.models import Claim, ClaimReview, ClaimVersion, Comment, Metric, MetricLatest, Run


def of_project(session: Session, project_id: int) -> list[Claim]:
    """Every claim of the project, by id (at most the project's cap: backend/claims/service.py)."""
    return list(session.scalars(select(Claim).where(Claim.project_id == project_id).order_by(Claim.id)))


def page(session: Session, project_id: int, after_id: int | None, limit: int) -> list[Claim]:
    """Up to ``limit`` claims of the project with an id above ``after_id`` (a keyset page), by id."""
    stmt = select(Claim).where(Claim.project_id == project_id)
    if after_id is not None:
        stmt = stmt.where(Claim.id > after_id)
    return list(session.scalars(stmt.order_by(Claim.id).limit(limit)))


def count(session: Session, project_id: int) -> int:
    return int(session.scalar(select(func.count(Claim.id)).where(Claim.project_id == project_id)) or 0)


def by_name(session: Session, project_id: int, name: str) -> Claim | None:
    return session.scalars(select(Claim).where(Claim.project_id == project_id, Claim.name == name)).first()


def versions(session: Session, claim_id: int) -> list[ClaimVersion]:
    stmt = select(ClaimVersion).where(ClaimVersion.claim_id == claim_id).order_by(ClaimVersion.version)
    return list(session.scalars(stmt))


def version(session: Session, claim_id: int, number: int) -> ClaimVersion | None:
    return session.get(ClaimVersion, (claim_id, number))


def current_versions(session: Session, claims: list[Claim]) -> dict[int, ClaimVersion]:
    if not claims:
        return {}
    wanted = [and_(ClaimVersion.claim_id == c.id, ClaimVersion.version == c.version) for c in claims]
    return {v.claim_id: v for v in session.scalars(select(ClaimVersion).where(or_(*wanted)))}


def reviews(session: Session, claim_id: int) -> list[ClaimReview]:
    stmt = select(ClaimReview).where(ClaimReview.claim_id == claim_id).order_by(ClaimReview.id)
    return list(session.scalars(stmt))


def latest_reviews(session: Session, claim_ids: list[int]) -> dict[int, str]:
    """Each claim's latest review state."""
    if not claim_ids:
        return {}
    last = (
        select(func.max(ClaimReview.id))
        .where(ClaimReview.claim_id.in_(claim_ids))
        .group_by(ClaimReview.claim_id)
        .scalar_subquery()
    )
    rows = session.execute(select(ClaimReview.claim_id, ClaimReview.state).where(ClaimReview.id.in_(last)))
    return {claim_id: state for claim_id, state in rows}


def comments(session: Session, claim_id: int) -> list[Comment]:
    return list(session.scalars(select(Comment).where(Comment.claim_id == claim_id).order_by(Comment.id)))


# ------------------------------------------------------------------------------------------ evaluation


def arm_values(
    project_id: int,
    match: ColumnElement[bool],
    key: str,
    pick: Any,
    seed: Any,
    mean_last: int | None,
) -> Subquery:
    """One row per succeeded run of the project that ``match`` selects and that has a finite value: its
    id (``rid``), its seed's JSON text (``seed``) and its value (``x``). ``pick(latest, kind)`` reads the
    value from the run's metric_latest row of ``key``; ``mean_last``: the mean of the series' last N finite
    points instead (numbered by step, descending, per run)."""
    runs = select(Run.id).where(Run.project_id == project_id, Run.status == "succeeded", match)
    if mean_last is None:
        latest = aliased(MetricLatest, name="ml")
        value: Any = pick(latest, Run.kind)
        stmt = (
            select(Run.id.label("rid"), seed.label("seed"), value.label("x"))
            .join(latest, and_(latest.run_id == Run.id, latest.key == key))
            .where(Run.project_id == project_id, Run.status == "succeeded", match)
        )
        inner = stmt.subquery()
        return select(inner).where(inner.c.x.is_not(None)).subquery()
    rank = func.row_number().over(partition_by=Metric.run_id, order_by=Metric.step.desc()).label("rn")
    ranked = (
        select(Metric.run_id, Metric.value, rank)
        .where(Metric.key == key, Metric.value.is_not(None), Metric.run_id.in_(runs))
        .subquery()
    )
    means = (
        select(ranked.c.run_id, func.avg(ranked.c.value).label("x"))
        .where(ranked.c.rn <= mean_last)
        .group_by(ranked.c.run_id)
        .subquery()
    )
    return (
        select(Run.id.label("rid"), seed.label("seed"), means.c.x)
        .join(means, means.c.run_id == Run.id)
        .subquery()
    )


def aggregate(session: Session, values: Subquery) -> tuple[int, float | None, float | None, int, int]:
    """An arm's count, sum and sum of squares of its values, its distinct seeds and its runs with a seed."""
    x = values.c.x
    row = session.execute(
        select(
            func.count(x),
            func.sum(x),
            func.sum(x * x),
            func.count(func.distinct(values.c.seed)),
            func.count(values.c.seed),
        )
    ).one()
    n, total, squares, seeds, seeded = row
    return int(n), _float(total), _float(squares), int(seeds), int(seeded)


def run_ids(session: Session, values: Subquery, limit: int) -> list[int]:
    return [int(i) for i in session.scalars(select(values.c.rid).order_by(values.c.rid).limit(limit))]


def paired(session: Session, ref: Subquery, other: Subquery) -> tuple[int, float | None, float | None]:
    """The per-seed differences other - ref over the seeds both arms hold: count, sum, sum of squares."""
    d = other.c.x - ref.c.x
    row = session.execute(
        select(func.count(d), func.sum(d), func.sum(d * d)).select_from(
            ref.join(other, ref.c.seed == other.c.seed)
        )
    ).one()
    return int(row[0]), _float(row[1]), _float(row[2])


def values(session: Session, arm: Subquery) -> list[tuple[str | None, float]]:
    """An arm's (seed, value) rows by run id (a bootstrap resamples the values themselves)."""
    rows = session.execute(select(arm.c.seed, arm.c.x).order_by(arm.c.rid))
    return [(seed, float(x)) for seed, x in rows]


def first_started(session: Session, project_id: int, matches: list[ColumnElement[bool]]) -> datetime | None:
    """When the first run of the project that any of ``matches`` selects started (any status)."""
    stmt = (
        select(Run.started_at)
        .where(Run.project_id == project_id, Run.started_at.is_not(None), or_(*matches))
        .order_by(Run.started_at.asc())
        .limit(1)
    )  # not MIN(): SQLite's aggregate comes back as text, the column as a UTC datetime
    value: datetime | None = session.scalar(stmt)
    return value


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
