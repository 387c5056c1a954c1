"""project_secrets.hosts: where a secret may be sent, set by a project admin with its value

A member's skillmix spec named ``api_key_secret: OPENAI_API_KEY`` and an endpoint of
their own, and the run sent that endpoint the project's key. A secret now carries the hosts (or URL
prefixes) it may be sent to (worker/specs/confine, SecretHost); a spec that sends it elsewhere is a 422,
and the worker checks again before it connects.

Existing secrets get an empty list: they may be sent nowhere until a project admin names their hosts
(``reasonlab secrets hosts NAME --host ...``, or project settings in the dashboard). Nothing recorded
says where a secret was meant to go, and guessing from the specs that named it would allow exactly the
endpoints a member chose; until then, submissions naming it are 422s saying so and queued runs fail at
the start with the same message (docs/operations.md, "Project secrets").

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-28 18:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # a default in the catalog: no table rewrite on Postgres, and SQLite adds a NOT NULL column with one
    op.add_column(
        "project_secrets", sa.Column("hosts", sa.JSON(), nullable=False, server_default=sa.text("'[]'"))
    )


def downgrade() -> None:
    with op.batch_alter_table("project_secrets") as batch:  # SQLite drops a column by copying the table
        batch.drop_column("hosts")
