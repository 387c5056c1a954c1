"""per-example tables (issue 25): filled by the per-example work

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26 05:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
