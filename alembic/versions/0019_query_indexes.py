"""indexes for the query language's sorts at scale (bench/query_scale.py)

A page sorted by name (``GET /runs?sort=name``, ``GET /experiments?sort=name``) orders by
``name IS NULL, name, id`` (rows without a name last in both directions, ties by id: backend/query
``order``). These indexes hold exactly that order within a project, ascending and descending, so a first
page reads 50 index entries instead of sorting every run of the project: 515 ms -> ~1 ms of SQL at
1,000,000 runs (docs/benchmarks.md, Query language at scale).

``ix_runs_project_created`` (project_id, created_at) finds a project's runs of a time window
(``created > now - 1d``) without reading the others: what a filtered but unsorted read (seed groups over
the runs of the last day) needs; a page sorted by created walks the primary key instead.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-26 05:55:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEXES = [
    ("ix_runs_project_name", "runs", "name"),
    ("ix_runs_project_name_desc", "runs", "name DESC"),
    ("ix_experiments_project_name", "experiments", "name"),
    ("ix_experiments_project_name_desc", "experiments", "name DESC"),
]


def upgrade() -> None:
    for name, table, order in INDEXES:
        op.create_index(name, table, ["project_id", sa.text("(name IS NULL)"), sa.text(order), "id"])
    op.create_index("ix_runs_project_created", "runs", ["project_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_runs_project_created", table_name="runs")
    for name, table, _ in reversed(INDEXES):
        op.drop_index(name, table_name=table)
