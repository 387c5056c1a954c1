"""runs: a name a member gives a run

1. ``runs.name``: null until someone names the run (``PATCH /runs/{id}``); the dashboard, the CLI and the
   exports show it beside the run's number.
2. The runs table's revision trigger of 0006 also counts a change of ``name``: the experiment page's
   encoded runs table (backend/experiments/table.py) shows it, so a rename must invalidate it.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25 22:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SHOWN_BEFORE = ("index", "status", "attempt", "created_at", "started_at", "finished_at", "params")
SHOWN = (*SHOWN_BEFORE, "name")


def _changed(columns: Sequence[str], old: str, new: str, distinct: str, cast: str) -> str:
    return " OR ".join(
        f'{old}."{c}"{cast if c == "params" else ""} {distinct} {new}."{c}"{cast if c == "params" else ""}'
        for c in columns
    )


def _pg_trigger(columns: Sequence[str]) -> str:
    # params is json (no equality operator): compared as text
    return f"""
    CREATE TRIGGER runs_table_rev BEFORE UPDATE ON runs FOR EACH ROW
    WHEN ({_changed(columns, "OLD", "NEW", "IS DISTINCT FROM", "::text")}) EXECUTE FUNCTION runs_table_rev()
    """


def _sqlite_trigger(columns: Sequence[str]) -> str:
    of = ", ".join(f'"{c}"' for c in columns)
    return f"""
    CREATE TRIGGER runs_table_rev AFTER UPDATE OF {of} ON runs FOR EACH ROW
    WHEN {_changed(columns, "OLD", "NEW", "IS NOT", "")}
    BEGIN UPDATE runs SET table_rev = table_rev + 1 WHERE id = NEW.id; END
    """


def _retrigger(columns: Sequence[str]) -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    op.execute("DROP TRIGGER IF EXISTS runs_table_rev ON runs" if postgres else "DROP TRIGGER IF EXISTS runs_table_rev")
    op.execute(_pg_trigger(columns) if postgres else _sqlite_trigger(columns))


def upgrade() -> None:
    # Not in batch mode: on SQLite a batch would recreate runs (and drop its triggers and cascades).
    op.add_column("runs", sa.Column("name", sa.String(length=200), nullable=True))
    _retrigger(SHOWN)


def downgrade() -> None:
    _retrigger(SHOWN_BEFORE)
    op.drop_column("runs", "name")
