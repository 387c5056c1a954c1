"""project secrets: keys for outside endpoints, sealed with a key only the API holds

A spec named an environment variable of the worker (``api_key_env``) and the worker
sent its value to the spec's URL. Keys are now project secrets (backend/secrets/), set by a project
admin, sealed with AES-GCM under a key workers do not hold, handed only to a run whose spec names them.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25 19:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import backend.models

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "project_secrets",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("sealed", sa.Text(), nullable=False),
        sa.Column("updated_at", backend.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column(
            "updated_by_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="SET NULL"), nullable=True
        ),
        sa.UniqueConstraint("project_id", "name", name="uq_project_secrets_name"),
    )


def downgrade() -> None:
    op.drop_table("project_secrets")
