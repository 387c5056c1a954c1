"""the MLflow mirror, written by the API from the database: its outbox per run and watermark per series

Workers wrote MLflow themselves and a later attempt walked 10,000-step windows from
a series' first step to its last to catch the mirror up (one point at step 5.2e9: 523,000 requests). The
mirror is now the API leader's (backend/mirror/): workers need no MLflow URL, and every loop is bounded by
the points that exist.

1. ``mirror_runs``: one row per run that left ``queued`` (the outbox): the MLflow run it is mirrored to,
   its generation (a rebuilt mirror is a new MLflow run), the attempt its tags describe, how far the
   finish (results, artifacts, status) went, and ``pending`` / ``wanted``. A trigger on ``runs`` sets
   ``pending`` and bumps ``wanted`` whenever a run's status changes to anything but ``queued`` (claim,
   finish, cancel, reaper), whatever code changes it; the mirror clears ``pending`` once it mirrored a
   finished run, only if ``wanted`` did not move meanwhile.
2. ``mirror_series``: per (run, key) the largest step sent to MLflow (``sent_step``), and ``seq`` /
   ``changed_from``, which metric ingest bumps / lowers when a batch rewrites a stored point with another
   value or adds a point below the series' latest step (backend/mirror/repository.py, ``note_changes``).
   The mirror advances ``sent_step`` only while ``seq`` is what it read before reading the points; a
   change at or below ``sent_step`` makes it rebuild the run's mirror (MLflow appends a re-logged step),
   once the run finished (``mirror_runs.stale`` meanwhile).

Runs mirrored by workers before this revision (``runs.mlflow_run_id`` set) are adopted as they are: their
series count as sent up to their latest step. Runs that left ``queued`` without an MLflow run are queued
for the mirror.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24 10:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import backend.models

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PG_UP = [
    """
    CREATE FUNCTION runs_mirror_pending() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO mirror_runs (run_id, pending, wanted) VALUES (NEW.id, true, 1)
        ON CONFLICT (run_id) DO UPDATE SET pending = true, wanted = mirror_runs.wanted + 1;
        RETURN NULL;
    END $$
    """,
    """
    CREATE TRIGGER runs_mirror_pending AFTER UPDATE OF status ON runs FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.status <> 'queued')
    EXECUTE FUNCTION runs_mirror_pending()
    """,
]
PG_DOWN = [
    "DROP TRIGGER IF EXISTS runs_mirror_pending ON runs",
    "DROP FUNCTION IF EXISTS runs_mirror_pending()",
]
SQLITE_UP = [
    """
    CREATE TRIGGER runs_mirror_pending AFTER UPDATE OF status ON runs FOR EACH ROW
    WHEN NEW.status IS NOT OLD.status AND NEW.status <> 'queued'
    BEGIN
        INSERT INTO mirror_runs (run_id, pending, wanted) VALUES (NEW.id, 1, 1)
        ON CONFLICT (run_id) DO UPDATE SET pending = 1, wanted = wanted + 1;
    END
    """,
]
SQLITE_DOWN = ["DROP TRIGGER IF EXISTS runs_mirror_pending"]

TERMINAL = "('succeeded', 'failed', 'cancelled')"
# runs the workers mirrored: adopted (a finished one counts as mirrored at its attempt and status)
ADOPT_RUNS = f"""
    INSERT INTO mirror_runs (run_id, pending, wanted, mlflow_run_id, attempt, done)
    SELECT id, status NOT IN {TERMINAL}, 1, mlflow_run_id, attempt,
        CASE WHEN status IN {TERMINAL} THEN CAST(attempt AS VARCHAR(20)) || ':' || status END
    FROM runs WHERE mlflow_run_id IS NOT NULL
"""
ADOPT_SERIES = """
    INSERT INTO mirror_series (run_id, key, sent_step, seq)
    SELECT l.run_id, l.key, l.step, 0 FROM metric_latest l JOIN runs r ON r.id = l.run_id
    WHERE r.mlflow_run_id IS NOT NULL
"""
# runs that started and have no MLflow run (MLflow was down for their worker): the mirror makes one
QUEUE_RUNS = """
    INSERT INTO mirror_runs (run_id, pending, wanted)
    SELECT id, true, 1 FROM runs WHERE mlflow_run_id IS NULL AND status <> 'queued'
"""


def upgrade() -> None:
    op.create_table(
        "mirror_runs",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("pending", sa.Boolean(), server_default=sa.true(), nullable=False),
        sa.Column("wanted", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("mlflow_run_id", sa.String(length=64), nullable=True),
        sa.Column("generation", sa.Integer(), server_default="0", nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=True),
        sa.Column("done", sa.String(length=40), nullable=True),
        sa.Column("finishing", sa.String(length=40), nullable=True),
        sa.Column("results_after", sa.Integer(), server_default="0", nullable=False),
        sa.Column("artifacts_after", sa.Text(), server_default="", nullable=False),
        sa.Column("failures", sa.Integer(), server_default="0", nullable=False),
        sa.Column("retry_at", backend.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column("serviced_at", backend.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("stale", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_mirror_runs_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_mirror_runs")),
    )
    op.create_index(op.f("ix_mirror_runs_pending"), "mirror_runs", ["pending", "run_id"], unique=False)
    op.create_table(
        "mirror_series",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=250), nullable=False),
        sa.Column("sent_step", sa.BigInteger(), nullable=True),
        sa.Column("seq", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("changed_from", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_mirror_series_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "key", name=op.f("pk_mirror_series")),
    )
    op.execute(ADOPT_RUNS)
    op.execute(ADOPT_SERIES)
    op.execute(QUEUE_RUNS)
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in PG_UP if postgres else SQLITE_UP:
        op.execute(statement)


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in PG_DOWN if postgres else SQLITE_DOWN:
        op.execute(statement)
    op.drop_table("mirror_series")
    op.drop_index(op.f("ix_mirror_runs_pending"), table_name="mirror_runs")
    op.drop_table("mirror_runs")
