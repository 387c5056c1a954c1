"""runs.group_key: a run's seed group (GET /runs?group_by=default)

``group_key`` is the sha256 hex of the run's spec as canonical JSON (keys sorted, no spaces, lists in order)
without any key named ``seed``, at any depth (backend/groups/key.py computes it for new runs). Existing
runs are backfilled here in Python, in batches by id (both dialects: no JSON function of either database is
needed), and an index (project_id, group_key) serves the grouped query of a project.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26 05:40:00
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 1000


# A frozen copy of backend/groups/key.py (a migration must not change when the app does;
# tests/backend/test_run_groups.py checks that both give the same keys).
def _without_seed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_seed(v) for k, v in value.items() if k != "seed"}
    if isinstance(value, list):
        return [_without_seed(v) for v in value]
    return value


def _group_key(spec: Any) -> str:
    text = json.dumps(_without_seed(spec), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def upgrade() -> None:
    # Not in batch mode: on SQLite a batch would recreate runs (and drop its triggers and cascades).
    op.add_column("runs", sa.Column("group_key", sa.String(length=64), nullable=True))
    op.create_index("ix_runs_project_group_key", "runs", ["project_id", "group_key"])
    conn = op.get_bind()
    runs = sa.table("runs", sa.column("id", sa.Integer()), sa.column("spec", sa.JSON()))
    keys = sa.table("runs", sa.column("id", sa.Integer()), sa.column("group_key", sa.String()))
    update = sa.update(keys).where(keys.c.id == sa.bindparam("rid")).values(group_key=sa.bindparam("key"))
    after = 0
    while True:
        rows = conn.execute(
            sa.select(runs.c.id, runs.c.spec).where(runs.c.id > after).order_by(runs.c.id).limit(BATCH)
        ).all()
        if not rows:
            break
        spec_of = [(rid, spec if isinstance(spec, dict) else json.loads(spec or "{}")) for rid, spec in rows]
        conn.execute(update, [{"rid": rid, "key": _group_key(spec)} for rid, spec in spec_of])
        after = rows[-1][0]


def downgrade() -> None:
    op.drop_index("ix_runs_project_group_key", table_name="runs")
    op.drop_column("runs", "group_key")
