"""runs.provenance: where an external run came from (its script's command line, git state, host)

A run created by a script through the SDK (backend/tracking/) records the command line, the git commit and
dirty diff, the Python version, the installed packages and the host it ran on; runs a worker executes keep
null. Nullable without a default: a catalog change on Postgres, no table rewrite.

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-28 15:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("provenance", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column("runs", "provenance")
