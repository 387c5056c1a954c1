"""metric points keep NaN and infinities: a kind column beside the (finite) value

Postgres' double precision holds NaN and infinities, SQLite's REAL turns a NaN into NULL, so the kind of
a non-finite point is its own small integer (common/nonfinite.py: 1 NaN, 2 +inf, 3 -inf) and
``value`` stays finite or NULL: ``metric.nonfinite``, ``metric_latest.nonfinite`` (a series' latest
point), and on ``metric_rollup`` the count of non-finite points of a block (``nf``) and the kind of its
last point (``klast``). Points stored before this were written as gaps (NULL, kind NULL) and stay so.

Revision ID: 0029
Revises: 0028
Create Date: 2026-11-28 21:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # nullable columns and a catalog default: no table rewrite on Postgres (metric is the largest table)
    op.add_column("metric", sa.Column("nonfinite", sa.SmallInteger(), nullable=True))
    op.add_column("metric_latest", sa.Column("nonfinite", sa.SmallInteger(), nullable=True))
    op.add_column("metric_rollup", sa.Column("nf", sa.Integer(), nullable=False, server_default=sa.text("0")))
    op.add_column("metric_rollup", sa.Column("klast", sa.SmallInteger(), nullable=True))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN on both (SQLite 3.35+): no copy of the tables, whose triggers (migrations
    # 0003, 0005) name them, which a copy-and-rename would break on SQLite
    for table, column in (
        ("metric_rollup", "klast"),
        ("metric_rollup", "nf"),
        ("metric_latest", "nonfinite"),
        ("metric", "nonfinite"),
    ):
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
