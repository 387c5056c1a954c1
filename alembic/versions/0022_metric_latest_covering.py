"""metric_latest (run_id, key) INCLUDE (value, vmin, vmax): index-only lookups of a run's metric values

Seed groups (``GET /runs?group_by=...&metrics=...``, backend/groups/service.py) outer-join metric_latest
once per metric key and run: 100,000 lookups for 50,000 runs and two keys. Through the primary key each
lookup also read the row from the table; this index holds the three values a metric column reads, so
the lookup is an index-only scan (no heap fetch once autovacuum has marked the pages all-visible):
docs/benchmarks.md, Query language at scale. On SQLite it is a plain (run_id, key) index (no INCLUDE).

Building it locks metric_latest's writes for its duration (a few seconds per million rows).

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-26 08:20:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_metric_latest_run_values",
        "metric_latest",
        ["run_id", "key"],
        postgresql_include=["value", "vmin", "vmax"],
    )


def downgrade() -> None:
    op.drop_index("ix_metric_latest_run_values", table_name="metric_latest")
