"""metrics: the runs' summary in its own table (metric_latest); metric -> runs checked per statement

Two changes to metric ingest:

1. ``runs.summary`` (a JSON of each key's latest value, plus ``_steps``) becomes the table
   ``metric_latest`` (run_id, key, step, value), upserted with "a larger step wins": concurrent batches
   into one run no longer lock the run row to rewrite the JSON (they deadlocked on Postgres: the foreign
   key's share lock, then the summary's exclusive one). Filled from ``metric`` (each key's largest step).
2. ``metric.run_id``'s declared foreign key to ``runs`` is replaced by triggers with the same meaning
   (the run must exist, ON DELETE CASCADE, NO ACTION on a change of ``runs.id``). Postgres checked the
   foreign key once per inserted point (~40% of a 10,000-point batch's insert); the Postgres trigger
   checks once per statement and run, and takes the same KEY SHARE lock on the run row as the foreign
   key, so a concurrent DELETE of the run waits for the insert and its cascade then removes the points
   (or the insert, if it comes second, fails). SQLite keeps a per-row check (as its foreign key did).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 09:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FK_MESSAGE = 'insert or update on table "metric" violates foreign key "metric_run_id -> runs.id"'

PG_UP = [
    # metric: the run of every inserted point exists, checked once per statement and run
    f"""
    CREATE FUNCTION metric_check_runs() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        rid integer;
    BEGIN
        FOR rid IN SELECT DISTINCT run_id FROM new_metric LOOP
            PERFORM 1 FROM runs WHERE id = rid FOR KEY SHARE;
            IF NOT FOUND THEN
                RAISE EXCEPTION '{FK_MESSAGE}' USING ERRCODE = 'foreign_key_violation',
                    DETAIL = format('Key (run_id)=(%s) is not present in table "runs".', rid);
            END IF;
        END LOOP;
        RETURN NULL;
    END $$
    """,
    """
    CREATE TRIGGER metric_check_runs AFTER INSERT ON metric
    REFERENCING NEW TABLE AS new_metric FOR EACH STATEMENT EXECUTE FUNCTION metric_check_runs()
    """,
    # metric: a point moved to another run (no code does; an upsert keeps run_id, so the WHEN skips it)
    f"""
    CREATE FUNCTION metric_check_run() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM 1 FROM runs WHERE id = NEW.run_id FOR KEY SHARE;
        IF NOT FOUND THEN
            RAISE EXCEPTION '{FK_MESSAGE}' USING ERRCODE = 'foreign_key_violation',
                DETAIL = format('Key (run_id)=(%s) is not present in table "runs".', NEW.run_id);
        END IF;
        RETURN NULL;
    END $$
    """,
    """
    CREATE TRIGGER metric_check_run AFTER UPDATE ON metric FOR EACH ROW
    WHEN (OLD.run_id IS DISTINCT FROM NEW.run_id) EXECUTE FUNCTION metric_check_run()
    """,
    # runs: ON DELETE CASCADE, NO ACTION on a changed id, and TRUNCATE runs takes the points along
    f"""
    CREATE FUNCTION runs_metric_cascade() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'TRUNCATE' THEN
            TRUNCATE metric;
        ELSIF TG_OP = 'DELETE' THEN
            DELETE FROM metric WHERE run_id = OLD.id;
        ELSIF EXISTS (SELECT 1 FROM metric WHERE run_id = OLD.id) THEN
            RAISE EXCEPTION '{FK_MESSAGE}' USING ERRCODE = 'foreign_key_violation',
                DETAIL = format('Key (id)=(%s) is still referenced from table "metric".', OLD.id);
        END IF;
        RETURN NULL;
    END $$
    """,
    "CREATE TRIGGER runs_metric_delete AFTER DELETE ON runs FOR EACH ROW EXECUTE FUNCTION runs_metric_cascade()",
    """
    CREATE TRIGGER runs_metric_update AFTER UPDATE OF id ON runs FOR EACH ROW
    WHEN (OLD.id IS DISTINCT FROM NEW.id) EXECUTE FUNCTION runs_metric_cascade()
    """,
    """
    CREATE TRIGGER runs_metric_truncate AFTER TRUNCATE ON runs
    FOR EACH STATEMENT EXECUTE FUNCTION runs_metric_cascade()
    """,
]
PG_DOWN = [
    "DROP TRIGGER IF EXISTS runs_metric_truncate ON runs",
    "DROP TRIGGER IF EXISTS runs_metric_update ON runs",
    "DROP TRIGGER IF EXISTS runs_metric_delete ON runs",
    "DROP FUNCTION IF EXISTS runs_metric_cascade()",
    "DROP TRIGGER IF EXISTS metric_check_run ON metric",
    "DROP FUNCTION IF EXISTS metric_check_run()",
    "DROP TRIGGER IF EXISTS metric_check_runs ON metric",
    "DROP FUNCTION IF EXISTS metric_check_runs()",
]

# SQLite: RAISE(ABORT) is a constraint error (IntegrityError), as the foreign key's failure was.
SQLITE_UP = [
    """
    CREATE TRIGGER metric_check_run_insert BEFORE INSERT ON metric
    WHEN NOT EXISTS (SELECT 1 FROM runs WHERE id = NEW.run_id)
    BEGIN SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed (metric.run_id -> runs.id)'); END
    """,
    """
    CREATE TRIGGER metric_check_run_update BEFORE UPDATE OF run_id ON metric
    WHEN NOT EXISTS (SELECT 1 FROM runs WHERE id = NEW.run_id)
    BEGIN SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed (metric.run_id -> runs.id)'); END
    """,
    "CREATE TRIGGER runs_metric_delete AFTER DELETE ON runs BEGIN DELETE FROM metric WHERE run_id = OLD.id; END",
    """
    CREATE TRIGGER runs_metric_update BEFORE UPDATE OF id ON runs
    WHEN NEW.id IS NOT OLD.id AND EXISTS (SELECT 1 FROM metric WHERE run_id = OLD.id)
    BEGIN SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed (metric.run_id -> runs.id)'); END
    """,
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS runs_metric_update",
    "DROP TRIGGER IF EXISTS runs_metric_delete",
    "DROP TRIGGER IF EXISTS metric_check_run_update",
    "DROP TRIGGER IF EXISTS metric_check_run_insert",
]

# each key's point at its largest step (portable: no DISTINCT ON)
FILL_LATEST = """
    INSERT INTO metric_latest (run_id, key, step, value)
    SELECT m.run_id, m.key, m.step, m.value
    FROM metric m
    JOIN (SELECT run_id, key, MAX(step) AS step FROM metric GROUP BY run_id, key) last
      ON m.run_id = last.run_id AND m.key = last.key AND m.step = last.step
"""


def _statements(up: bool) -> list[str]:
    if op.get_bind().dialect.name == "postgresql":
        return PG_UP if up else PG_DOWN
    return SQLITE_UP if up else SQLITE_DOWN


def upgrade() -> None:
    op.create_table(
        "metric_latest",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=250), nullable=False),
        sa.Column("step", sa.BigInteger(), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_metric_latest_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "key", name=op.f("pk_metric_latest")),
    )
    op.execute(FILL_LATEST)
    # Not in batch mode: on SQLite a batch would recreate runs, and dropping runs with foreign keys on
    # deletes every row that references it (results, logs, tags, ...). SQLite >= 3.35 drops a column.
    op.drop_column("runs", "summary")
    # On SQLite this recreates metric (a child table: nothing references it, nothing cascades).
    with op.batch_alter_table("metric", schema=None) as batch_op:
        batch_op.drop_constraint("fk_metric_run_id_runs", type_="foreignkey")
    for statement in _statements(up=True):
        op.execute(statement)


def downgrade() -> None:
    for statement in _statements(up=False):
        op.execute(statement)
    with op.batch_alter_table("metric", schema=None) as batch_op:
        batch_op.create_foreign_key("fk_metric_run_id_runs", "runs", ["run_id"], ["id"], ondelete="CASCADE")
    op.add_column("runs", sa.Column("summary", sa.JSON(), nullable=False, server_default="{}"))
    bind = op.get_bind()
    summaries: dict[int, dict[str, object]] = {}
    steps: dict[int, dict[str, int]] = {}
    for run_id, key, step, value in bind.execute(sa.text("SELECT run_id, key, step, value FROM metric_latest")):
        summaries.setdefault(run_id, {})[key] = value
        steps.setdefault(run_id, {})[key] = step
    runs = sa.table("runs", sa.column("id", sa.Integer()), sa.column("summary", sa.JSON()))
    for run_id, summary in summaries.items():
        bind.execute(runs.update().where(runs.c.id == run_id).values(summary={**summary, "_steps": steps[run_id]}))
    op.drop_table("metric_latest")
