"""runs.released: the attempts handed back at a worker's shutdown, counted apart

A worker shutting down gives its run back (``POST /runs/{id}/release``): the run is queued as the next
attempt, resumed from its checkpoint by another worker. Until now the release raised ``max_attempts`` by
one so the attempt would not count, and a run released three times read "attempt 4/6". Now the release
adds one to ``released`` and leaves ``max_attempts`` alone: ``attempt`` stays the number every claim gets
(the run token, the task id, ``run_attempts`` and every write of a worker name it), and the attempts
counted against ``max_attempts`` are ``attempt - released`` ("attempt 1/3, resumed 3x"; the query
language's ``attempt`` field).

Existing rows: ``released`` is the number of the run's ``run_attempts`` rows whose outcome is
``released`` (each written by a release, which also raised ``max_attempts`` by one), and ``max_attempts``
goes back down by as many (never below 1), so a run's counted attempt and its allowance read as if it had
been released under the new rule. A release before migration 0013 (or of an attempt claimed before it)
left no row: such a run keeps ``released`` 0 and the allowance it was raised to (it reads "attempt 4/6" as
before, never fewer attempts than it had). Only the runs with a released row are written. Downgrade
raises ``max_attempts`` by ``released`` again (the old rule) and drops the column.

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-28 18:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_RELEASED = "(SELECT count(*) FROM run_attempts a WHERE a.run_id = runs.id AND a.outcome = 'released')"


def upgrade() -> None:
    # a constant default: a catalog change on Postgres, no table rewrite
    op.add_column("runs", sa.Column("released", sa.Integer(), server_default="0", nullable=False))
    # both SET expressions read the row as it was (SQL's UPDATE semantics, SQLite's and Postgres')
    op.execute(
        f"""
        UPDATE runs
        SET released = {_RELEASED},
            max_attempts = CASE WHEN max_attempts - {_RELEASED} < 1 THEN 1
                                ELSE max_attempts - {_RELEASED} END
        WHERE EXISTS (SELECT 1 FROM run_attempts a WHERE a.run_id = runs.id AND a.outcome = 'released')
        """
    )


def downgrade() -> None:
    op.execute("UPDATE runs SET max_attempts = max_attempts + released WHERE released > 0")
    op.drop_column("runs", "released")
