"""run_examples, run_example_tables: per-example tables of a run

``run_examples`` (run_id, table_name, idx) holds one example's row as the kind posted it (``data``, JSON)
and its stable ``key`` (unique in its table: a diff of two runs matches rows on it); the primary key
makes a re-sent batch an overwrite. ``run_example_tables`` keeps each table's row count, so listing
tables never counts a million rows.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26 05:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import backend.models

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "run_examples",
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("table_name", sa.String(length=64), primary_key=True),
        sa.Column("idx", sa.Integer(), primary_key=True),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("created_at", backend.models.UTCDateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_run_examples_key", "run_examples", ["run_id", "table_name", "key"], unique=True)
    op.create_table(
        "run_example_tables",
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("table_name", sa.String(length=64), primary_key=True),
        sa.Column("rows", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", backend.models.UTCDateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("run_example_tables")
    op.drop_index("ix_run_examples_key", table_name="run_examples")
    op.drop_table("run_examples")
