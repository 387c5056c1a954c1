"""metric roll-ups: metric_rollup.run_id -> runs.id kept by the runs triggers, not a declared foreign key

Ingest writes ~1,100 roll-up rows per 10,000-point batch (10 keys x 1,000 steps: 100 + 10 +
1-2 + 1 blocks a key); Postgres checked the declared foreign key once per row, a KEY SHARE lock on the
run row each time, ~20-30 ms of the batch on the loaded 2-core machine (docs/benchmarks.md, "Metric
ingest"). Roll-up rows are written only in the transaction that writes the points of their blocks, after
them (backend/metrics/repository.py), and the points' insert already checks the run and holds its KEY
SHARE lock until commit (migration 0003), so a run cannot go between; the one thing the foreign key
still did is the cascade, which the runs triggers of migration 0003 now also do for metric_rollup:
deleting a run deletes its roll-ups, TRUNCATE runs truncates them. (A changed runs.id with roll-ups is
refused already: a run has roll-ups only if it has points, and those refuse it.)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 15:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FK_MESSAGE = 'insert or update on table "metric" violates foreign key "metric_run_id -> runs.id"'
FK_NAME = "fk_metric_rollup_run_id_runs"


def _pg_cascade(with_rollups: bool) -> str:
    """migration 0003's runs_metric_cascade(), with or without metric_rollup."""
    truncate = "TRUNCATE metric, metric_rollup;" if with_rollups else "TRUNCATE metric;"
    delete_rollups = "DELETE FROM metric_rollup WHERE run_id = OLD.id;" if with_rollups else ""
    return f"""
    CREATE OR REPLACE FUNCTION runs_metric_cascade() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'TRUNCATE' THEN
            {truncate}
        ELSIF TG_OP = 'DELETE' THEN
            DELETE FROM metric WHERE run_id = OLD.id;
            {delete_rollups}
        ELSIF EXISTS (SELECT 1 FROM metric WHERE run_id = OLD.id) THEN
            RAISE EXCEPTION '{FK_MESSAGE}' USING ERRCODE = 'foreign_key_violation',
                DETAIL = format('Key (id)=(%s) is still referenced from table "metric".', OLD.id);
        END IF;
        RETURN NULL;
    END $$
    """


SQLITE_UP = [
    "CREATE TRIGGER runs_metric_rollup_delete AFTER DELETE ON runs "
    "BEGIN DELETE FROM metric_rollup WHERE run_id = OLD.id; END",
]
SQLITE_DOWN = ["DROP TRIGGER IF EXISTS runs_metric_rollup_delete"]


def upgrade() -> None:
    # On SQLite this recreates metric_rollup (a child table: nothing references it, nothing cascades).
    with op.batch_alter_table("metric_rollup", schema=None) as batch_op:
        batch_op.drop_constraint(FK_NAME, type_="foreignkey")
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_pg_cascade(with_rollups=True))
    else:
        for statement in SQLITE_UP:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_pg_cascade(with_rollups=False))
    else:
        for statement in SQLITE_DOWN:
            op.execute(statement)
    with op.batch_alter_table("metric_rollup", schema=None) as batch_op:
        batch_op.create_foreign_key(FK_NAME, "runs", ["run_id"], ["id"], ondelete="CASCADE")
