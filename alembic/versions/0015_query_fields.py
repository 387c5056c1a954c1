"""the query language's fields: metric_latest.vmin / vmax, indexes on (key, value | vmin | vmax)

``min(metrics.k)`` and ``max(metrics.k)`` of the query language (backend/query) read each series'
smallest and largest finite value from its ``metric_latest`` row, kept at ingest
(backend/metrics/points.py); existing series are filled from their points (non-finite values are stored
as NULL and ignored). ``metrics.k > v`` finds runs through ``ix_metric_latest_key_value`` (and min / max through the
``vmin`` / ``vmax`` indexes), and a page sorted by one of them walks that index (backend/runs/repository.py,
``page_by_metric``).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26 05:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FILL = """
    UPDATE metric_latest SET
        vmin = (SELECT MIN(m.value) FROM metric m WHERE m.run_id = metric_latest.run_id AND m.key = metric_latest.key),
        vmax = (SELECT MAX(m.value) FROM metric m WHERE m.run_id = metric_latest.run_id AND m.key = metric_latest.key)
"""


def upgrade() -> None:
    op.add_column("metric_latest", sa.Column("vmin", sa.Float(), nullable=True))
    op.add_column("metric_latest", sa.Column("vmax", sa.Float(), nullable=True))
    op.execute(FILL)
    for column in ("value", "vmin", "vmax"):
        op.create_index(op.f(f"ix_metric_latest_key_{column}"), "metric_latest", ["key", column], unique=False)


def downgrade() -> None:
    for column in ("vmax", "vmin", "value"):
        op.drop_index(op.f(f"ix_metric_latest_key_{column}"), table_name="metric_latest")
    with op.batch_alter_table("metric_latest", schema=None) as batch_op:
        batch_op.drop_column("vmax")
        batch_op.drop_column("vmin")
