"""saved views (issue 25): filled by the saved-views work

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26 05:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
