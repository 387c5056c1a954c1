"""auto_indexes: the indexes the platform builds itself for a slow params sort or filter (Postgres only)

A page of runs or experiments sorted by (or filtered on) a ``params.<path>`` that was slow on a large table
makes the API build that path's sort index in the background (backend/query/autoindex.py); this table
records each one (path, entity, direction, its name, created, last used), so that at most
``Settings.auto_index_max`` exist and the least recently used is dropped for a new one. On SQLite the table
exists and stays empty.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-26 08:05:00
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import backend.models

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "auto_indexes",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("entity", sa.String(length=16), nullable=False),
        sa.Column("path", sa.String(length=500), nullable=False),
        sa.Column("direction", sa.String(length=4), nullable=False),
        sa.Column("index_name", sa.String(length=63), nullable=False),
        sa.Column("created_at", backend.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", backend.models.UTCDateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("entity", "path", "direction", name="uq_auto_indexes_path"),
        sa.UniqueConstraint("index_name", name="uq_auto_indexes_name"),
    )


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":  # the indexes it recorded go with it (names made by the app)
        for (name,) in bind.execute(sa.text("SELECT index_name FROM auto_indexes")).all():
            if re.fullmatch(r"[a-z0-9_]{1,63}", name):
                op.execute(sa.text(f'DROP INDEX IF EXISTS "{name}"'))
    op.drop_table("auto_indexes")
