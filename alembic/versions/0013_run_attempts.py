"""run_attempts: one row per attempt of a run (lost and requeued attempts used to leave no trace)

``run_attempts`` (run_id, attempt) records which worker held an attempt, from when to when, and how it
ended: running, succeeded, failed, cancelled, released (handed back at a worker's shutdown) or lost (its
heartbeat went stale: the reaper requeued or failed the run), and the checkpoint step it resumed from.
The run page's attempt history and the run time without downtime (the sum of attempt durations) read it.

Backfill: every run that ever started gets one row for its current attempt (started at ``started_at``;
ended at ``finished_at`` with the run's status when it finished); earlier attempts left no record.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25 22:20:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import backend.models

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "run_attempts",
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("attempt", sa.Integer(), primary_key=True),
        sa.Column("worker", sa.String(length=300), nullable=True),
        sa.Column("started_at", backend.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("ended_at", backend.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("resumed_step", sa.BigInteger(), nullable=True),
    )
    # the current attempt of every run a worker holds or ended; a queued run's started_at belongs to an
    # attempt before its current one (a retry or requeue), and a run cancelled while queued has no worker:
    # nothing is made up for them
    op.execute(
        """
        INSERT INTO run_attempts (run_id, attempt, worker, started_at, ended_at, outcome)
        SELECT id, attempt, worker, started_at,
               CASE WHEN status = 'running' THEN NULL ELSE finished_at END,
               status
        FROM runs
        WHERE started_at IS NOT NULL
          AND worker IS NOT NULL
          AND (status = 'running' OR (status IN ('succeeded', 'failed', 'cancelled')
                                      AND finished_at IS NOT NULL AND finished_at >= started_at))
        """
    )


def downgrade() -> None:
    op.drop_table("run_attempts")
