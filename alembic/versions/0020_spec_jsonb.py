"""runs.spec and experiments.spec as jsonb on Postgres (bench/query_scale.py)

The query language reads ``params.<path>`` from a spec on every matching row (filters, sorts, group
columns). As ``json`` (text) Postgres re-parses the whole spec for each ``json_extract_path``; as ``jsonb``
(stored parsed) a path is a lookup in the binary value. docs/benchmarks.md, Query language at scale, has
the figures at 1,000,000 runs.

jsonb keeps neither key order nor duplicate keys: a spec read back lists its keys in jsonb's order (shorter
keys first), which no reader depends on (``group_key`` hashes the canonical sorted JSON; the API's specs
are objects). SQLite keeps its JSON text; nothing changes there.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-26 06:20:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("runs", "experiments")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN spec TYPE jsonb USING spec::jsonb")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN spec TYPE json USING spec::json")
