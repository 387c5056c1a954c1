"""saved views: a named query, columns, grouping, sort and chart options, per project

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26 05:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import backend.models

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "saved_views",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("page", sa.String(length=16), nullable=False),
        sa.Column("state", sa.JSON(), nullable=False),
        sa.Column("author_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="SET NULL"), nullable=True),
        sa.Column("created_at", backend.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", backend.models.UTCDateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("project_id", "name", name="uq_saved_views_name"),
    )


def downgrade() -> None:
    op.drop_table("saved_views")
