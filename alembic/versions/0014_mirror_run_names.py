"""mirror_runs.name_sent: the name the run's MLflow run has

The MLflow mirror names a run's MLflow run after the run (``runs.name``, else ``run-<id>``) and renames it
(the ``mlflow.runName`` tag) when a member renames the run. ``name_sent`` records the name MLflow has, so a
rename is sent once, and a crash between MLflow's answer and the commit sends it again (idempotent).
Null: not recorded (rows made before this revision), compared as different: the name is set once more.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25 22:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # a plain ADD COLUMN on both databases (no batch mode: on SQLite a batch recreates the table)
    op.add_column("mirror_runs", sa.Column("name_sent", sa.String(length=200), nullable=True))


def downgrade() -> None:
    op.drop_column("mirror_runs", "name_sent")
