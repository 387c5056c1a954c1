"""project datasets: data files a member uploads to a project, named by specs as ``dataset:<name>``

A member without shell access to the GPU hosts could not bring a data file.
Uploads go to the artifact store (``datasets/project-<id>/<name>``); this table keeps their metadata.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 20:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import backend.models

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "project_datasets",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("uploaded_at", backend.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column(
            "uploaded_by_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="SET NULL"), nullable=True
        ),
        sa.UniqueConstraint("project_id", "name", name="uq_project_datasets_name"),
    )


def downgrade() -> None:
    op.drop_table("project_datasets")
