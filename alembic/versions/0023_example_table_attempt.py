"""run_example_tables.attempt: the attempt that wrote a per-example table's rows

A run resumed after a crash is a new attempt, and its rows replace the earlier attempt's: when an attempt
newer than the one recorded here posts its first batch to the table, the server deletes the old rows in
the same transaction (backend/examples/service.py ``post``), so rows logged in another order (a key at
another idx) are no longer refused as duplicates of the old attempt's. An older attempt posting after a
newer one took the table is refused. Existing tables are backfilled with their run's current attempt
(the attempt most likely to have written them; a later attempt still replaces them); NULL stays for a
table written without naming an attempt.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-26 08:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("run_example_tables", sa.Column("attempt", sa.Integer(), nullable=True))
    tables = sa.table(
        "run_example_tables", sa.column("run_id", sa.Integer()), sa.column("attempt", sa.Integer())
    )
    runs = sa.table("runs", sa.column("id", sa.Integer()), sa.column("attempt", sa.Integer()))
    current = sa.select(runs.c.attempt).where(runs.c.id == tables.c.run_id).scalar_subquery()
    op.get_bind().execute(sa.update(tables).values(attempt=current))


def downgrade() -> None:
    op.drop_column("run_example_tables", "attempt")
