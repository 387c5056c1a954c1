"""group summaries: a project's seed groups of ended runs, summed once, for the whole project's groups

The last scale goal still missed: ``GET /runs?project=..&group_by=default&metrics=...`` with no other
filter aggregated every run of the project and its metric_latest rows per request (1,000,000 runs: ~1.75 s
in the API). backend/groups/summary.py keeps, per project, the sums of the runs that had ended by a cut-off
time ``until`` (``group_summary_groups``: n and the first id per group key; ``group_summary_metrics``:
per group key, kind and metric key, count, sum, sum of squares, min and max of value, vmin and vmax), and
answers such a request from them plus the grouped query over the runs not covered (``ix_runs_project_open``
and ``ix_runs_project_finished`` find those). ``ix_runs_project_group_key`` gets ``id`` as its last column:
a group's first 100 members read in order from the index.

Exactness: the triggers below add 1 to ``group_summaries.generation`` in the transaction of any change to
a run the summary covers or could cover (ended by ``watch_until``): an insert or a delete of such a run
(statement triggers with transition tables on Postgres: one UPDATE per statement, not per row), an update
of its status, finished_at, project_id, group_key or kind (a row trigger whose WHEN filters out the other
updates without calling the function: heartbeats, progress, running runs), and on Postgres a TRUNCATE
(every summary). A summary answers only while
``built_generation = generation``. Metric writes are hooked in Python (backend/metrics/service.py, for a
run that is not running only: never a shared row in the running runs' ingest).

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-26 11:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ENDED = "('succeeded', 'failed', 'cancelled')"
OPEN = f"status NOT IN {ENDED}"
FIELDS = ("status", "finished_at", "project_id", "group_key", "kind")


def _covered(row: str, state: str = "group_summaries") -> str:
    return (
        f"({state}.project_id = {row}.project_id AND {row}.status IN {ENDED} "
        f"AND {row}.finished_at <= {state}.watch_until)"
    )


_CHANGED = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in FIELDS)
_ENDED_ROW = f"(OLD.status IN {ENDED} OR NEW.status IN {ENDED})"

PG_UP = [
    f"""
    CREATE FUNCTION group_summaries_rows() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE group_summaries SET generation = generation + 1
        WHERE EXISTS (SELECT 1 FROM changed WHERE {_covered("changed")});
        RETURN NULL;
    END $$
    """,
    f"""
    CREATE FUNCTION group_summaries_update() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE group_summaries SET generation = generation + 1
        WHERE {_covered("OLD")} OR {_covered("NEW")};
        RETURN NULL;
    END $$
    """,
    """
    CREATE FUNCTION group_summaries_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE group_summaries SET generation = generation + 1;
        RETURN NULL;
    END $$
    """,
    """
    CREATE TRIGGER group_summaries_truncate AFTER TRUNCATE ON runs
    FOR EACH STATEMENT EXECUTE FUNCTION group_summaries_truncate()
    """,
    """
    CREATE TRIGGER group_summaries_insert AFTER INSERT ON runs REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION group_summaries_rows()
    """,
    """
    CREATE TRIGGER group_summaries_delete AFTER DELETE ON runs REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION group_summaries_rows()
    """,
    f"""
    CREATE TRIGGER group_summaries_update AFTER UPDATE ON runs FOR EACH ROW
    WHEN ({_ENDED_ROW} AND ({_CHANGED})) EXECUTE FUNCTION group_summaries_update()
    """,
]
PG_DOWN = [
    "DROP TRIGGER IF EXISTS group_summaries_truncate ON runs",
    "DROP TRIGGER IF EXISTS group_summaries_update ON runs",
    "DROP TRIGGER IF EXISTS group_summaries_delete ON runs",
    "DROP TRIGGER IF EXISTS group_summaries_insert ON runs",
    "DROP FUNCTION IF EXISTS group_summaries_truncate()",
    "DROP FUNCTION IF EXISTS group_summaries_update()",
    "DROP FUNCTION IF EXISTS group_summaries_rows()",
]

_OF = ", ".join(FIELDS)
_SQLITE_CHANGED = " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in FIELDS)
SQLITE_UP = [
    f"""
    CREATE TRIGGER group_summaries_insert AFTER INSERT ON runs FOR EACH ROW
    WHEN NEW.status IN {ENDED} AND NEW.finished_at IS NOT NULL
    BEGIN UPDATE group_summaries SET generation = generation + 1 WHERE {_covered("NEW")}; END
    """,
    f"""
    CREATE TRIGGER group_summaries_delete AFTER DELETE ON runs FOR EACH ROW
    WHEN OLD.status IN {ENDED} AND OLD.finished_at IS NOT NULL
    BEGIN UPDATE group_summaries SET generation = generation + 1 WHERE {_covered("OLD")}; END
    """,
    f"""
    CREATE TRIGGER group_summaries_update AFTER UPDATE OF {_OF} ON runs FOR EACH ROW
    WHEN {_ENDED_ROW} AND ({_SQLITE_CHANGED})
    BEGIN UPDATE group_summaries SET generation = generation + 1 WHERE {_covered("OLD")} OR {_covered("NEW")}; END
    """,
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS group_summaries_update",
    "DROP TRIGGER IF EXISTS group_summaries_delete",
    "DROP TRIGGER IF EXISTS group_summaries_insert",
]


def _stats(prefix: str) -> list[sa.Column]:  # type: ignore[type-arg]
    return [
        sa.Column(f"{prefix}_n", sa.BigInteger(), nullable=False),
        sa.Column(f"{prefix}_sum", sa.Float(), nullable=True),
        sa.Column(f"{prefix}_sq", sa.Float(), nullable=True),
        sa.Column(f"{prefix}_min", sa.Float(), nullable=True),
        sa.Column(f"{prefix}_max", sa.Float(), nullable=True),
    ]


def upgrade() -> None:
    op.create_table(
        "group_summaries",
        sa.Column("project_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("generation", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("built_generation", sa.BigInteger(), nullable=True),
        sa.Column("until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("watch_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("built_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("build", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("fresh_clean", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("covered_runs", sa.BigInteger(), server_default="0", nullable=False),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("project_id"),
    )
    op.create_table(
        "group_summary_groups",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("build", sa.BigInteger(), nullable=False),
        sa.Column("group_key", sa.String(length=64), nullable=True),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.Column("first_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_group_summary_groups_project_id"), "group_summary_groups", ["project_id"])
    op.create_table(
        "group_summary_metrics",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("build", sa.BigInteger(), nullable=False),
        sa.Column("group_key", sa.String(length=64), nullable=True),
        sa.Column("kind", sa.String(length=100), nullable=False),
        sa.Column("key", sa.String(length=250), nullable=False),
        *_stats("v"),
        *_stats("lo"),
        *_stats("hi"),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_group_summary_metrics_project_id"), "group_summary_metrics", ["project_id"])
    op.drop_index("ix_runs_project_group_key", table_name="runs")
    op.create_index("ix_runs_project_group_key", "runs", ["project_id", "group_key", "id"])
    op.create_index(
        "ix_runs_project_open",
        "runs",
        ["project_id", "id"],
        postgresql_include=["group_key", "kind", "status", "started_at"],
        postgresql_where=sa.text(OPEN),
        sqlite_where=sa.text(OPEN),
    )
    op.create_index(
        "ix_runs_project_finished",
        "runs",
        ["project_id", "finished_at"],
        postgresql_where=sa.text(f"status IN {ENDED}"),
        sqlite_where=sa.text(f"status IN {ENDED}"),
    )
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in PG_UP if postgres else SQLITE_UP:
        op.execute(statement)


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in PG_DOWN if postgres else SQLITE_DOWN:
        op.execute(statement)
    op.drop_index("ix_runs_project_finished", table_name="runs")
    op.drop_index("ix_runs_project_open", table_name="runs")
    op.drop_index("ix_runs_project_group_key", table_name="runs")
    op.create_index("ix_runs_project_group_key", "runs", ["project_id", "group_key"])
    op.drop_index(op.f("ix_group_summary_metrics_project_id"), table_name="group_summary_metrics")
    op.drop_table("group_summary_metrics")
    op.drop_index(op.f("ix_group_summary_groups_project_id"), table_name="group_summary_groups")
    op.drop_table("group_summary_groups")
    op.drop_table("group_summaries")
