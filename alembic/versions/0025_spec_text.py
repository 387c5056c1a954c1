"""runs.spec_text and experiments.spec_text: a spec's JSON text as written, on Postgres

Since 0020 ``spec`` is jsonb on Postgres, which keeps no key order: a spec read back listed its keys shorter
first, while SQLite (JSON text) lists them as written. The backend now also stores the text it wrote in
``spec_text`` (Postgres only; ``backend/models.py`` writes it before an insert and answers ``spec`` from it
when a row loads); queries (``params.<path>``, the expression indexes of 0021) keep reading the jsonb column.

No backfill: an existing row's jsonb has already lost the order it was written in, so a copy of it would hold
nothing the jsonb does not; rows written before this revision keep jsonb's order (``spec_text`` null).

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-26 12:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("runs", "experiments")


def upgrade() -> None:
    # nullable without a default: a catalog change on Postgres, no table rewrite
    for table in TABLES:
        op.add_column(table, sa.Column("spec_text", sa.Text(), nullable=True))


def downgrade() -> None:
    for table in TABLES:
        op.drop_column(table, "spec_text")
