"""report_frozen_data: the data a draft's frozen data block showed when the server took its cut-off
(backend/reports/kept.py, docs/reports.md "Live and frozen")

A draft's frozen block kept only its cut-off (per run: attempt, status, each series' last step and row
version) and read its points again up to those steps, so a retry that rewrote them changed the draft's
figure. The server now keeps the block's data when it takes the cut-off, keyed by the report, the block id
and a hash of the cut-off and the block's data fields; a row goes with its report (cascade). Drafts saved
before this have no rows: their frozen blocks are read again from the cut-off and say so (``exact: false``).

Revision ID: 0032
Revises: 0031
Create Date: 2026-11-29 12:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0032"
down_revision: str | None = "0031"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "report_frozen_data",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("report_id", sa.Integer(), sa.ForeignKey("reports.id", ondelete="CASCADE"), nullable=False),
        sa.Column("block_id", sa.String(64), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("data", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("report_id", "block_id", name="uq_report_frozen_data_block"),
    )


def downgrade() -> None:
    op.drop_table("report_frozen_data")
