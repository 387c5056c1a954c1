"""runs: the parameters a run logs itself (``ctx.log_params``), stored and mirrored to MLflow

Moving the MLflow mirror to the API (0007) lost them: the worker's MLflow sink had logged them, and the
API sink sent nothing (the spec was taken for the run's parameters). A kind logs derived values there
(parameter counts, data sizes, the model's routing), which existed nowhere on the platform.

1. ``runs.logged_params``: what the run logged, flattened (``{"derived": {"n": 1}}`` is ``derived.n``) and
   merged by key, the last value of a key kept (``POST /runs/{id}/params``); null until it logs any.
   ``runs.logged_params_rev`` counts the merges that changed it (0: nothing logged).
2. ``mirror_runs.params_sent``: the ``logged_params_rev`` whose params the run's MLflow run has (null: none
   yet, or a new MLflow run): the mirror logs them when it differs (backend/mirror/service.py).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26 10:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Not in batch mode: on SQLite a batch would recreate runs (and drop its triggers and cascades).
    op.add_column("runs", sa.Column("logged_params", sa.JSON(), nullable=True))
    op.add_column("runs", sa.Column("logged_params_rev", sa.BigInteger(), server_default="0", nullable=False))
    op.add_column("mirror_runs", sa.Column("params_sent", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    op.drop_column("mirror_runs", "params_sent")
    op.drop_column("runs", "logged_params_rev")
    op.drop_column("runs", "logged_params")
