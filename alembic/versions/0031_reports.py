"""reports: a team's write-up of a result as typed blocks, its published revisions, comments anchored
to blocks, reviews of revisions and read-only share links (backend/reports/, docs/reports.md)

A revision keeps the data its figures and tables showed when it was published (``data``), so it renders
the same after its runs go on or are retried. A share link's token is kept as its sha256, as API tokens are.

Revision ID: 0031
Revises: 0030
Create Date: 2026-11-28 21:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0031"
down_revision: str | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def _user(name: str) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.Integer(), sa.ForeignKey("users.id", ondelete="SET NULL"), nullable=True)


def upgrade() -> None:
    op.create_table(
        "reports",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("blocks", sa.JSON(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        _user("author_id"),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_index("ix_reports_project_id", "reports", ["project_id"])
    op.create_table(
        "report_revisions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("report_id", sa.Integer(), sa.ForeignKey("reports.id", ondelete="CASCADE"), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("blocks", sa.JSON(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        _user("author_id"),
        sa.Column("created_at", TS, nullable=False),
        sa.UniqueConstraint("report_id", "number", name="uq_report_revisions_number"),
    )
    op.create_table(
        "report_comments",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("report_id", sa.Integer(), sa.ForeignKey("reports.id", ondelete="CASCADE"), nullable=False),
        sa.Column("block_id", sa.String(64), nullable=False),
        _user("author_id"),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_index("ix_report_comments_report_id", "report_comments", ["report_id"])
    op.create_table(
        "report_reviews",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "revision_id",
            sa.Integer(),
            sa.ForeignKey("report_revisions.id", ondelete="CASCADE"),
            nullable=False,
        ),
        _user("reviewer_id"),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_index("ix_report_reviews_revision_id", "report_reviews", ["revision_id"])
    op.create_table(
        "report_shares",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "revision_id",
            sa.Integer(),
            sa.ForeignKey("report_revisions.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("hide_authors", sa.Boolean(), nullable=False),
        sa.Column("expires_at", TS, nullable=False),
        sa.Column("revoked_at", TS, nullable=True),
        _user("created_by_id"),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_index("ix_report_shares_revision_id", "report_shares", ["revision_id"])


def downgrade() -> None:
    op.drop_index("ix_report_shares_revision_id", table_name="report_shares")
    op.drop_table("report_shares")
    op.drop_index("ix_report_reviews_revision_id", table_name="report_reviews")
    op.drop_table("report_reviews")
    op.drop_index("ix_report_comments_report_id", table_name="report_comments")
    op.drop_table("report_comments")
    op.drop_table("report_revisions")
    op.drop_index("ix_reports_project_id", table_name="reports")
    op.drop_table("reports")
