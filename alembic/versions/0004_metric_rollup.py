"""metric roll-ups: per-block min/max/last/count of every series, kept at ingest

``metric_rollup`` holds one row per (run, key, width, block): the points with ``step // width == block``
summarised (first and last step, min, max, count, value and time at the last step) for widths 10, 100,
1,000 and 10,000 steps. The downsampled query reads them for wide windows instead of scanning every point
(a 1,000,000-point series: ~1,000 rows). Filled here from the stored points, the finest width from
``metric`` and each coarser one from the width below it (the same statements ingest runs).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 13:10:00
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import backend.models

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# the widths of backend.metrics.repository.ROLLUP_WIDTHS at the time of this migration (not imported:
# a migration describes its own moment)
WIDTHS = (10, 100, 1000, 10000)

FILL_FROM_POINTS = """
    INSERT INTO metric_rollup (run_id, key, width, block, s0, s1, vmin, vmax, n, vlast, tlast)
    SELECT a.run_id, a.key, {w}, a.blk, a.s0, a.s1, a.vmin, a.vmax, a.n, m.value, m.time
    FROM (
        SELECT run_id, key, step / {w} AS blk, MIN(step) AS s0, MAX(step) AS s1,
            MIN(value) AS vmin, MAX(value) AS vmax, COUNT(*) AS n
        FROM metric GROUP BY run_id, key, step / {w}
    ) a
    JOIN metric m ON m.run_id = a.run_id AND m.key = a.key AND m.step = a.s1
"""
FILL_FROM_FINER = """
    INSERT INTO metric_rollup (run_id, key, width, block, s0, s1, vmin, vmax, n, vlast, tlast)
    SELECT a.run_id, a.key, {w}, a.blk, a.s0, a.s1, a.vmin, a.vmax, a.n, c.vlast, c.tlast
    FROM (
        SELECT run_id, key, block / {r} AS blk, MIN(s0) AS s0, MAX(s1) AS s1,
            MIN(vmin) AS vmin, MAX(vmax) AS vmax, SUM(n) AS n, MAX(block) AS child
        FROM metric_rollup WHERE width = {c} GROUP BY run_id, key, block / {r}
    ) a
    JOIN metric_rollup c ON c.run_id = a.run_id AND c.key = a.key AND c.width = {c} AND c.block = a.child
"""


def upgrade() -> None:
    op.create_table(
        "metric_rollup",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=250), nullable=False),
        sa.Column("width", sa.Integer(), nullable=False),
        sa.Column("block", sa.BigInteger(), nullable=False),
        sa.Column("s0", sa.BigInteger(), nullable=False),
        sa.Column("s1", sa.BigInteger(), nullable=False),
        sa.Column("vmin", sa.Float(), nullable=True),
        sa.Column("vmax", sa.Float(), nullable=True),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("vlast", sa.Float(), nullable=True),
        sa.Column("tlast", backend.models.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_metric_rollup_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "key", "width", "block", name=op.f("pk_metric_rollup")),
    )
    op.execute(FILL_FROM_POINTS.format(w=WIDTHS[0]))
    for finer, width in itertools.pairwise(WIDTHS):
        op.execute(FILL_FROM_FINER.format(w=width, c=finer, r=width // finer))


def downgrade() -> None:
    op.drop_table("metric_rollup")
