"""runs: the progress rate of the current attempt, for an ETA of every running run

The dashboard's ETA was measured in the browser from the progress events it had seen, so a
page opened mid-run (and the runs table) had none. The API now keeps, per run, the current attempt's
first progress report (``progress_base_at``, ``progress_base_done``) and when its done count last moved
(``progress_at``), and answers ``progress.eta_at`` (backend/runs/eta.py).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 20:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import backend.models

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Not in batch mode: on SQLite a batch would recreate runs (and drop its triggers and cascades).
    ts = backend.models.UTCDateTime(timezone=True)
    op.add_column("runs", sa.Column("progress_base_at", ts, nullable=True))
    op.add_column(
        "runs", sa.Column("progress_base_done", sa.BigInteger(), server_default="0", nullable=False)
    )
    op.add_column("runs", sa.Column("progress_at", ts, nullable=True))


def downgrade() -> None:
    for column in ("progress_at", "progress_base_done", "progress_base_at"):
        op.drop_column("runs", column)
