"""claims, claim_versions, claim_reviews; comments.claim_id and activity.claim_id

A claim of a paper as an object of the project (backend/claims/): two or more arms selected by queries, a
metric, a direction, a smallest effect, a test, alpha and a family, versioned (every edit adds a row of
claim_versions, never changed after) and optionally locked (pre-registration: the version, its hash and
the time). Claims are commented on (comments.claim_id) and reviewed (claim_reviews) like experiments, and
appear in the project's activity feed (activity.claim_id).

Revision ID: 0030
Revises: 0029
Create Date: 2026-11-28 21:00:00
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import sqlalchemy as sa
from alembic import op

import backend.models

revision: str = "0030"
down_revision: str | None = "0029"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


@contextmanager
def _quiet() -> Iterator[None]:
    """SQLAlchemy's warnings about the expression indexes of the tables a batch copy reflects, silenced."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Skipped unsupported reflection")
        yield


def upgrade() -> None:
    ts = backend.models.UTCDateTime(timezone=True)
    op.create_table(
        "claims",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("author_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="SET NULL"), nullable=True),
        sa.Column("locked_version", sa.Integer(), nullable=True),
        sa.Column("locked_hash", sa.String(length=64), nullable=True),
        sa.Column("locked_at", ts, nullable=True),
        sa.Column(
            "locked_by_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="SET NULL"), nullable=True
        ),
        sa.Column("created_at", ts, nullable=False),
        sa.Column("updated_at", ts, nullable=False),
        sa.UniqueConstraint("project_id", "name", name="uq_claims_name"),
    )
    op.create_index("ix_claims_project_id", "claims", ["project_id"])
    op.create_table(
        "claim_versions",
        sa.Column("claim_id", sa.Integer(), sa.ForeignKey("claims.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("version", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("definition", sa.JSON(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("author_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="SET NULL"), nullable=True),
        sa.Column("created_at", ts, nullable=False),
    )
    op.create_table(
        "claim_reviews",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("claim_id", sa.Integer(), sa.ForeignKey("claims.id", ondelete="CASCADE"), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("reviewer_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="SET NULL"), nullable=True),
        sa.Column("state", sa.String(length=32), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", ts, nullable=False),
    )
    op.create_index("ix_claim_reviews_claim_id", "claim_reviews", ["claim_id"])
    # SQLite adds a column with a foreign key by copying the table (batch; its reflection reads the constraint
    # back with its ON DELETE only from a table-level one), Postgres alters it in place. The copy reflects the
    # tables it refers to, and SQLAlchemy warns on stderr about their expression indexes, at every first start
    # of ``reasonlab up``: nothing to warn about here
    for table in ("comments", "activity"):
        with _quiet(), op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("claim_id", sa.Integer(), nullable=True))
            batch.create_foreign_key(
                f"fk_{table}_claim_id_claims", "claims", ["claim_id"], ["id"], ondelete="CASCADE"
            )
    op.create_index("ix_comments_claim_id", "comments", ["claim_id"])


def downgrade() -> None:
    op.drop_index("ix_comments_claim_id", table_name="comments")
    for table in ("activity", "comments"):
        with _quiet(), op.batch_alter_table(table) as batch:
            batch.drop_constraint(f"fk_{table}_claim_id_claims", type_="foreignkey")
            batch.drop_column("claim_id")
    op.drop_table("claim_reviews")
    op.drop_table("claim_versions")
    op.drop_index("ix_claims_project_id", table_name="claims")
    op.drop_table("claims")
