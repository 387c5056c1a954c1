"""The platform's tables (SQLAlchemy 2.0 typed models). Alembic migrations mirror these exactly."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
    event,
    false,
    text,
    true,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.orm import Mapped, Mapper, QueryContext, attributes, mapped_column, relationship
from sqlalchemy.types import TypeDecorator

from backend.db import Base, utcnow

ROLES = ("viewer", "member", "admin")


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every backend (SQLite hands back naive values otherwise)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        if value is not None and dialect.name == "sqlite":
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value


TS = UTCDateTime()

# a spec (runs, experiments): jsonb on Postgres, so the query language's params.<path> reads a path from the
# stored binary value instead of re-parsing the spec's text per row (migration 0020); JSON text on SQLite.
# jsonb keeps neither key order nor duplicate keys, so on Postgres a row also keeps the spec's JSON text as
# written (``spec_text``, migration 0025) and the ORM answers ``spec`` from it (the events below): a spec reads
# back in the order it was stored on both databases, while queries keep reading the jsonb column
SPEC_JSON = JSON().with_variant(JSONB(), "postgresql")


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(150), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)


class ApiToken(Base):
    __tablename__ = "api_tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(TS, nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(TS, nullable=True)
    user: Mapped[User] = relationship()


class Project(Base):
    __tablename__ = "projects"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)


class Membership(Base):
    __tablename__ = "memberships"
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    role: Mapped[str] = mapped_column(String(16))


class Experiment(Base):
    __tablename__ = "experiments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(300))
    description: Mapped[str] = mapped_column(Text, default="")
    kind: Mapped[str] = mapped_column(String(100), index=True)
    spec: Mapped[dict[str, Any]] = mapped_column(SPEC_JSON)
    # Postgres only: ``spec`` as the JSON text written, in its key order (jsonb's is shorter keys first); null
    # on SQLite (its ``spec`` is that text) and on rows written before migration 0025 (they keep jsonb's order)
    spec_text: Mapped[str | None] = mapped_column(Text, nullable=True)
    sweep: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    author: Mapped[User | None] = relationship()
    project: Mapped[Project] = relationship()

    __table_args__ = (
        # a page sorted by name (backend/query ``order``: name IS NULL, name, id) read in index order
        # (migration 0019)
        Index("ix_experiments_project_name", "project_id", text("(name IS NULL)"), text("name"), "id"),
        Index(
            "ix_experiments_project_name_desc", "project_id", text("(name IS NULL)"), text("name DESC"), "id"
        ),
    )


class Run(Base):
    __tablename__ = "runs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id", ondelete="CASCADE"), index=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(100), index=True)
    index: Mapped[int] = mapped_column(Integer)
    spec: Mapped[dict[str, Any]] = mapped_column(SPEC_JSON)
    # Postgres only: ``spec`` as the JSON text written, in its key order (jsonb's is shorter keys first); null
    # on SQLite (its ``spec`` is that text) and on rows written before migration 0025 (they keep jsonb's order)
    spec_text: Mapped[str | None] = mapped_column(Text, nullable=True)
    params: Mapped[dict[str, Any]] = mapped_column(JSON)
    queue: Mapped[str] = mapped_column(String(50), default="cpu")
    status: Mapped[str] = mapped_column(String(16), default="queued")
    # the attempt's number: every claim gets the next one (the run token, the task id, the run_attempts row
    # and every write of a worker name it), released attempts included
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    # the attempts allowed, counted without the released ones: the run has used ``attempt - released``
    max_attempts: Mapped[int] = mapped_column(Integer, default=3)
    # attempts handed back at a worker's shutdown (POST /runs/{id}/release): they do not count against
    # ``max_attempts`` (migration 0027)
    released: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    worker: Mapped[str | None] = mapped_column(String(300), nullable=True)
    heartbeat_at: Mapped[datetime | None] = mapped_column(TS, nullable=True)
    progress_done: Mapped[int] = mapped_column(BigInteger, default=0)
    progress_total: Mapped[int] = mapped_column(BigInteger, default=0)
    progress_message: Mapped[str] = mapped_column(Text, default="")
    # the progress rate of the current attempt, for its ETA (backend/runs/eta.py): its first progress
    # report (time and done, reset by a claim or when the total changes or done goes back) and when
    # done last moved
    progress_base_at: Mapped[datetime | None] = mapped_column(TS, nullable=True)
    progress_base_done: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    progress_at: Mapped[datetime | None] = mapped_column(TS, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    dispatched: Mapped[bool] = mapped_column(Boolean, default=False)
    dispatched_at: Mapped[datetime | None] = mapped_column(TS, nullable=True)
    mlflow_run_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # what a member named the run (PATCH /runs/{id}); null: it goes by its number (migration 0012)
    name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(TS, nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(TS, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow, onupdate=utcnow)
    # +1 whenever a column the runs table shows changes (index, status, attempt, times, params): a trigger
    # of migration 0006 does it, whatever code updates the row. With metric_latest.rev it lets the runs
    # table's encoding be reused until something in it changes (backend/experiments/table.py).
    table_rev: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    # what the run logged itself (ctx.log_params; POST /runs/{id}/params): flattened keys, merged, the last
    # value of a key kept; null until it logs any. logged_params_rev counts the merges that changed it
    # (optimistic concurrency of the merge; the MLflow mirror compares it with mirror_runs.params_sent).
    logged_params: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    logged_params_rev: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    # the run's seed group: sha256 hex of its spec's canonical JSON without any key named
    # ``seed`` (backend/groups/key.py), set at creation, backfilled by migration 0018; GET /runs?group_by=
    # default groups on it
    group_key: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # where an external run came from (backend/tracking/: command line, git commit and dirty diff, python,
    # packages, host), as its script sent it at creation or resume; null on runs a worker executes.
    # Deferred: a diff can be large, and pages of runs never read it (migration 0026)
    provenance: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True, deferred=True)
    experiment: Mapped[Experiment] = relationship()

    __table_args__ = (
        # (id last: migration 0024) a group's first members in id order without sorting the group
        Index("ix_runs_project_group_key", "project_id", "group_key", "id"),
        # the runs a seed-group summary does not cover (backend/groups/summary.py, migration 0024): those not
        # ended (few), and those that ended after its cut-off time
        Index(
            "ix_runs_project_open",
            "project_id",
            "id",
            # an index-only scan reads them (status and started_at: queued runs never started)
            postgresql_include=["group_key", "kind", "status", "started_at"],
            postgresql_where=text("status NOT IN ('succeeded', 'failed', 'cancelled')"),
            sqlite_where=text("status NOT IN ('succeeded', 'failed', 'cancelled')"),
        ),
        Index(
            "ix_runs_project_finished",
            "project_id",
            "finished_at",
            postgresql_where=text("status IN ('succeeded', 'failed', 'cancelled')"),
            sqlite_where=text("status IN ('succeeded', 'failed', 'cancelled')"),
        ),
        # a page sorted by name (backend/query ``order``: name IS NULL, name, id) read in index order
        # (migration 0019)
        Index("ix_runs_project_name", "project_id", text("(name IS NULL)"), text("name"), "id"),
        Index("ix_runs_project_name_desc", "project_id", text("(name IS NULL)"), text("name DESC"), "id"),
        Index("ix_runs_project_created", "project_id", "created_at"),
        Index("ix_runs_status_dispatched", "status", "dispatched"),
        Index("ix_runs_status_heartbeat", "status", "heartbeat_at"),
        # the runs table's fingerprint (count, sum of ids, sum of table_rev) read from the index alone
        Index("ix_runs_experiment_table_rev", "experiment_id", "table_rev", "id"),
    )


def _write_spec_text(_mapper: Mapper[Any], connection: Connection, target: Experiment | Run) -> None:
    """Before an insert (and an update that sets ``spec``) on Postgres: keep the spec's JSON text as written."""
    if connection.dialect.name != "postgresql":
        return
    # an update that leaves ``spec`` alone neither loads nor writes it
    if attributes.get_history(target, "spec", attributes.PASSIVE_NO_INITIALIZE).has_changes():
        target.spec_text = json.dumps(target.spec)


def _read_spec_text(target: Experiment | Run, *_: Any) -> None:
    """When a row is loaded or refreshed: ``spec`` from the text kept beside the jsonb (same value, its keys in
    the order written), set as the loaded value (not a change to flush). A row without one keeps jsonb's."""
    kept = target.__dict__.get("spec_text")
    stored = target.__dict__.get("spec")
    if kept is not None and stored is not None:
        attributes.set_committed_value(target, "spec", spec_as_written(stored, kept))


def spec_as_written(spec: dict[str, Any], spec_text: str | None) -> dict[str, Any]:
    """The stored spec (the jsonb value: what queries read and the worker runs) with its keys in the order
    written, from ``spec_text``; the jsonb value itself where the text no longer equals it (a statement
    that set ``spec`` without the ORM's events: a bulk UPDATE, SQL by hand), so the two never disagree
    on what a spec says, only on its order."""
    if spec_text is None:
        return spec
    written = json.loads(spec_text)
    return dict(written) if written == spec else spec


def _on_load(target: Experiment | Run, _context: QueryContext) -> None:
    _read_spec_text(target)


for _model in (Experiment, Run):
    event.listen(_model, "before_insert", _write_spec_text)
    event.listen(_model, "before_update", _write_spec_text)
    event.listen(_model, "load", _on_load)
    event.listen(_model, "refresh", _read_spec_text)


class Metric(Base):
    """One point of one series. Primary key run+key+step: a re-sent point overwrites (DESIGN.md).

    ``run_id`` references ``runs.id`` (ON DELETE CASCADE) through triggers, not a declared foreign key:
    a foreign key checks the run once per inserted point, ~40% of a batch's insert on Postgres; the
    triggers of migration 0003 check it once per statement and run (Postgres) and cascade deletes.
    """

    __tablename__ = "metric"
    run_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(250), primary_key=True)
    step: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    value: Mapped[float | None] = mapped_column(Float, nullable=True)  # finite only; NULL otherwise
    # NaN / +inf / -inf as common/nonfinite.py codes them (value NULL then); NULL: finite or a gap
    nonfinite: Mapped[int | None] = mapped_column(SmallInteger, nullable=True)
    time: Mapped[datetime] = mapped_column(TS, default=utcnow)


class MetricLatest(Base):
    """Each series' latest point (largest step): the run's summary (``RunPublic.summary``, sorting by a
    final metric) and the latest steps the event stream announces. Its own rows, so concurrent batches
    into one run update it without locking the run (a conditional upsert: a larger step wins)."""

    __tablename__ = "metric_latest"
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(250), primary_key=True)
    step: Mapped[int] = mapped_column(BigInteger)
    value: Mapped[float | None] = mapped_column(Float, nullable=True)  # finite only, as Metric.value
    nonfinite: Mapped[int | None] = mapped_column(SmallInteger, nullable=True)  # as Metric.nonfinite
    # 1 when inserted, +1 at every update of the row (upsert_latest): the sum over an experiment's rows
    # grows with every change whatever the commits' order, without a lock on anything else
    rev: Mapped[int] = mapped_column(BigInteger, default=1, server_default="1")
    # the smallest and largest finite value of the whole series (NULL: none), kept at ingest from the
    # series' coarsest roll-up blocks (backend/metrics/points.py): the query language's min() and max()
    vmin: Mapped[float | None] = mapped_column(Float, nullable=True)
    vmax: Mapped[float | None] = mapped_column(Float, nullable=True)

    # the query language's metric filters and sorts (backend/query): runs whose latest / smallest / largest
    # `key` compares to a value, a page of runs in that order without sorting every run
    __table_args__ = (
        Index("ix_metric_latest_key_value", "key", "value"),
        Index("ix_metric_latest_key_vmin", "key", "vmin"),
        Index("ix_metric_latest_key_vmax", "key", "vmax"),
        # a run's values of a key without reading the table (seed groups' lookups; migration 0022)
        Index("ix_metric_latest_run_values", "run_id", "key", postgresql_include=["value", "vmin", "vmax"]),
    )


class MetricRollup(Base):
    """One block of one series, summarised at ingest: the points with ``step // width == block``, their
    first and last step, min and max value, count, and the value and time at the last step. Kept for
    ``width`` in ``ROLLUP_WIDTHS`` (10, 100, 1,000, 10,000 steps), each level recomputed from the finer one
    in the transaction that writes the points (backend/metrics/points.py), so a re-sent batch or a
    resumed run overwrites instead of double-counting. The downsampled query reads these for wide windows:
    ~1,000 rows instead of a 1,000,000-point scan.

    ``run_id`` references ``runs.id`` as ``Metric.run_id`` does, without a declared foreign key (a check
    per roll-up row at ingest): the rows are written after their points, in the points' transaction,
    whose insert checks the run and holds it; the runs triggers (migrations 0003, 0005) cascade a run's
    deletion to them."""

    __tablename__ = "metric_rollup"
    run_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(250), primary_key=True)
    width: Mapped[int] = mapped_column(Integer, primary_key=True)
    block: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    s0: Mapped[int] = mapped_column(BigInteger)
    s1: Mapped[int] = mapped_column(BigInteger)
    vmin: Mapped[float | None] = mapped_column(Float, nullable=True)  # over the finite values; NULL: none
    vmax: Mapped[float | None] = mapped_column(Float, nullable=True)
    n: Mapped[int] = mapped_column(Integer)
    vlast: Mapped[float | None] = mapped_column(Float, nullable=True)  # the value at s1 (NULL: a gap)
    tlast: Mapped[datetime] = mapped_column(TS)
    # how many of the n points are NaN or infinite, and the kind of the point at s1 (Metric.nonfinite)
    nf: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    klast: Mapped[int | None] = mapped_column(SmallInteger, nullable=True)


class Result(Base):
    __tablename__ = "results"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(100), index=True)
    # the writer's idempotency key: a re-sent record (a retried post, a resumed attempt) replaces its copy
    key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)

    __table_args__ = (UniqueConstraint("run_id", "key", name="uq_results_run_id_key"),)


class RunAttempt(Base):
    """One attempt of a run: which worker held it, when, and how it ended (migration 0013).

    Written by the lifecycle (backend/runs/attempts.py) in the transaction of the run's change: a claim
    opens the row, a finish, release, reap or cancel closes it. ``ended_at`` of a lost attempt is its last
    heartbeat (when the worker was last known to work on it), so durations never count the downtime."""

    __tablename__ = "run_attempts"
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    attempt: Mapped[int] = mapped_column(Integer, primary_key=True)
    worker: Mapped[str | None] = mapped_column(String(300), nullable=True)
    started_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(TS, nullable=True)
    # running | succeeded | failed | cancelled | released | lost
    outcome: Mapped[str] = mapped_column(String(16), default="running")
    # the checkpoint step the attempt resumed from (POST /runs/{id}/resumed); null: it started afresh
    resumed_step: Mapped[int | None] = mapped_column(BigInteger, nullable=True)

    def seconds(self, run: Run) -> float:
        """Seconds the attempt was worked on: to its end, or (running) to the run's last heartbeat."""
        end = self.ended_at
        if end is None:
            end = run.heartbeat_at if run.attempt == self.attempt and run.heartbeat_at else self.started_at
        return max(0.0, (end - self.started_at).total_seconds())


def run_seconds(run: Run, rows: list[RunAttempt]) -> float | None:
    """Seconds workers spent on ``run`` over its attempts ``rows`` (all of them), the running one to its
    last heartbeat: the downtime between attempts is not counted. What the API shows as ``run_seconds``
    (backend/runs/attempts.py) and the MLflow mirror makes its MLflow run's duration (backend/mirror/).
    None: it never started."""
    if rows:
        return sum(row.seconds(run) for row in rows)
    # a run that started before migration 0013 kept no attempts: its one span, as before
    if run.started_at is None or run.status == "queued":
        return None
    end = run.finished_at if run.status != "running" else run.heartbeat_at
    return max(0.0, (end - run.started_at).total_seconds()) if end else None


class RunLog(Base):
    __tablename__ = "run_logs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    time: Mapped[datetime] = mapped_column(TS, default=utcnow)
    line: Mapped[str] = mapped_column(Text)


class Comment(Base):
    __tablename__ = "comments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    experiment_id: Mapped[int | None] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), nullable=True, index=True
    )
    run_id: Mapped[int | None] = mapped_column(
        ForeignKey("runs.id", ondelete="CASCADE"), nullable=True, index=True
    )
    # a comment on a claim (backend/claims/, migration 0030): no experiment or run
    claim_id: Mapped[int | None] = mapped_column(
        ForeignKey("claims.id", ondelete="CASCADE"), nullable=True, index=True
    )
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), nullable=True)
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    author: Mapped[User | None] = relationship()


class Review(Base):
    __tablename__ = "reviews"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id", ondelete="CASCADE"), index=True)
    reviewer_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    state: Mapped[str] = mapped_column(String(32))
    body: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    reviewer: Mapped[User | None] = relationship()


class ExperimentTag(Base):
    __tablename__ = "experiment_tags"
    experiment_id: Mapped[int] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), primary_key=True
    )
    tag: Mapped[str] = mapped_column(String(100), primary_key=True)


class RunTag(Base):
    __tablename__ = "run_tags"
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    tag: Mapped[str] = mapped_column(String(100), primary_key=True, index=True)


class Star(Base):
    __tablename__ = "stars"
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    experiment_id: Mapped[int] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), primary_key=True
    )


class Activity(Base):
    __tablename__ = "activity"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    type: Mapped[str] = mapped_column(String(32))
    actor_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), nullable=True)
    experiment_id: Mapped[int | None] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), nullable=True
    )
    run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), nullable=True)
    # what a claim's row is about (created, edited, locked, commented, reviewed; migration 0030)
    claim_id: Mapped[int | None] = mapped_column(ForeignKey("claims.id", ondelete="CASCADE"), nullable=True)
    message: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    actor: Mapped[User | None] = relationship()


class MirrorRun(Base):
    """The MLflow mirror's outbox entry of a run (backend/mirror/): where the run is mirrored and how far.

    A trigger on ``runs`` (migration 0007) inserts the row, sets ``pending`` and bumps ``wanted`` whenever
    the run's status changes to anything but ``queued``; the mirror clears ``pending`` once a finished run
    is fully mirrored, only if ``wanted`` is still what it read. ``done`` / ``finishing`` are
    ``"<attempt>:<status>"``: the finish the mirror completed / the one its cursors (``results_after``, a
    result id; ``artifacts_after``, a stored path) belong to."""

    __tablename__ = "mirror_runs"
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    pending: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    wanted: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    mlflow_run_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    generation: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    attempt: Mapped[int | None] = mapped_column(Integer, nullable=True)  # the attempt its tags describe
    done: Mapped[str | None] = mapped_column(String(40), nullable=True)
    finishing: Mapped[str | None] = mapped_column(String(40), nullable=True)
    results_after: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    artifacts_after: Mapped[str] = mapped_column(Text, default="", server_default="")
    failures: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    retry_at: Mapped[datetime | None] = mapped_column(TS, nullable=True)
    serviced_at: Mapped[datetime | None] = mapped_column(TS, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    # a point already in MLflow changed while the run was active: its MLflow run is rebuilt once it finished
    stale: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # the runs.logged_params_rev whose params its MLflow run has (null: none yet, or a new MLflow run)
    params_sent: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    # the name its MLflow run has (runs.name, else run-<id>; migration 0014); null: not recorded
    name_sent: Mapped[str | None] = mapped_column(String(200), nullable=True)

    __table_args__ = (Index("ix_mirror_runs_pending", "pending", "run_id"),)


class MirrorSeries(Base):
    """The MLflow mirror's watermark of one series: ``sent_step``, the largest step sent to MLflow (every
    point at or below it is there, once). Metric ingest bumps ``seq`` and lowers ``changed_from`` when it
    rewrites a stored point with another value or adds one below the series' latest step; the mirror
    advances ``sent_step`` only if ``seq`` did not move since it read the points, and rebuilds the run's
    mirror when ``changed_from <= sent_step`` (MLflow appends a re-logged step)."""

    __tablename__ = "mirror_series"
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(250), primary_key=True)
    sent_step: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    seq: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    changed_from: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


class ProjectSecret(Base):
    """A key for an outside endpoint, set by a project admin (backend/secrets/): the value is sealed with
    a key only the API holds and handed only to a run whose spec names it, to be sent only to ``hosts``
    (host names, ``*.domain``, addresses or networks, URL prefixes: worker/specs/confine SecretHost; empty:
    nowhere, migration 0028)."""

    __tablename__ = "project_secrets"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(64))
    sealed: Mapped[str] = mapped_column(Text)
    hosts: Mapped[list[str]] = mapped_column(JSON, default=list)
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    updated_by_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    updated_by: Mapped[User | None] = relationship()

    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_project_secrets_name"),)


class ProjectDataset(Base):
    """A data file a member uploaded to a project (backend/datasets/): the bytes in the artifact store
    under ``datasets/project-<id>/<name>``, named by a spec as ``dataset:<name>`` in a data-path field
    and fetched by a run whose spec names it, with its own token."""

    __tablename__ = "project_datasets"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(128))
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    uploaded_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    uploaded_by_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    uploaded_by: Mapped[User | None] = relationship()

    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_project_datasets_name"),)


class SavedView(Base):
    """A named view of a project's runs, experiments or comparison (backend/views/): a query, columns with
    their aggregates, grouping, sort and chart options (``state``, validated by ``ViewState``), shared
    with the project's members; its author or a project admin renames, updates or deletes it."""

    __tablename__ = "saved_views"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    page: Mapped[str] = mapped_column(String(16))
    state: Mapped[dict[str, Any]] = mapped_column(JSON)
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    author: Mapped[User | None] = relationship()

    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_saved_views_name"),)


class RunExample(Base):
    """One row of a run's per-example table: an example's inputs and outputs as a kind
    posted them (a Skill-Mix grading, a CARMA synonym flip, a prediction). ``idx`` is the row's place in
    its table (the context numbers rows in logging order), so a batch re-sent after a retry or a resumed
    attempt writes the same rows again instead of adding copies; ``key`` is the example's stable id, what
    a diff of two runs matches rows on (unique in the table). Pages are read by keyset on ``idx``."""

    __tablename__ = "run_examples"
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    table_name: Mapped[str] = mapped_column(String(64), primary_key=True)
    idx: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(200))
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)

    __table_args__ = (Index("ix_run_examples_key", "run_id", "table_name", "key", unique=True),)


class RunExampleTable(Base):
    """A run's per-example table, its row count and the attempt that wrote it, kept by the writes
    (``backend/examples``) so that listing tables or paging never counts rows."""

    __tablename__ = "run_example_tables"
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    table_name: Mapped[str] = mapped_column(String(64), primary_key=True)
    rows: Mapped[int] = mapped_column(BigInteger, default=0)
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    # the attempt whose rows the table holds (None: written without naming one): a newer attempt's first
    # batch clears them (a resumed run's rows replace the crashed attempt's), an older one is refused
    attempt: Mapped[int | None] = mapped_column(Integer, nullable=True)


class AutoIndex(Base):
    """An index the platform built itself (Postgres only, backend/query/autoindex.py): a page of ``entity``
    (``runs`` or ``experiments``) sorted by, or filtered on, the spec path ``path`` (``params.lr``) was slow
    on a large table, so the path's sort index (``backend.query.sort_index_sql``) was created in the
    background. At most ``Settings.auto_index_max`` rows: the least recently used index is dropped for a new
    one. ``last_used_at``: the last request that sorted or filtered by the path (kept in memory by each API
    process and written here every ``autoindex.FLUSH_SECONDS``)."""

    __tablename__ = "auto_indexes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    entity: Mapped[str] = mapped_column(String(16))
    path: Mapped[str] = mapped_column(String(500))
    direction: Mapped[str] = mapped_column(String(4))  # asc | desc
    index_name: Mapped[str] = mapped_column(String(63))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    last_used_at: Mapped[datetime] = mapped_column(TS, default=utcnow)

    __table_args__ = (
        UniqueConstraint("entity", "path", "direction", name="uq_auto_indexes_path"),
        UniqueConstraint("index_name", name="uq_auto_indexes_name"),
    )


class GroupSummary(Base):
    """A project's stored seed-group summary (backend/groups/summary.py, migration 0024): the default grouping's
    sums over the runs that had ended by ``until`` (status succeeded, failed or cancelled and finished_at <=
    until), rows in ``group_summary_groups`` and ``group_summary_metrics``. It answers while ``built_generation
    == generation``: triggers on runs (an insert, a delete, or an update of status, finished_at, project,
    group key or kind of a run that ends at or before ``watch_until``) and a metric written to a run that is
    not running add 1 to ``generation`` in their own transaction. ``watch_until`` >= ``until``: a build
    raises it before it reads, so a change during the build is seen. ``covered_runs``: the runs summed."""

    __tablename__ = "group_summaries"
    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True, autoincrement=False
    )
    generation: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    built_generation: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    until: Mapped[datetime | None] = mapped_column(TS, nullable=True)
    watch_until: Mapped[datetime | None] = mapped_column(TS, nullable=True)
    built_at: Mapped[datetime | None] = mapped_column(TS, nullable=True)
    # the rows of the current build carry this number (a reader checks it did not change while it read)
    build: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    # no queued run that never started had a metric row at the build (and a metric written to one adds 1
    # to generation): a request then looks up no metric of those runs
    fresh_clean: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    covered_runs: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


class GroupSummaryGroup(Base):
    """A seed group's ended runs in a project's summary: how many and the smallest id."""

    __tablename__ = "group_summary_groups"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    build: Mapped[int] = mapped_column(BigInteger)
    group_key: Mapped[str | None] = mapped_column(String(64), nullable=True)
    n: Mapped[int] = mapped_column(BigInteger)
    first_id: Mapped[int] = mapped_column(Integer)


class GroupSummaryMetric(Base):
    """A seed group's ended runs of one kind, one metric key: count, sum, sum of squares, min and max of the
    finite ``value`` (v), ``vmin`` (lo) and ``vmax`` (hi) of their metric_latest rows."""

    __tablename__ = "group_summary_metrics"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    build: Mapped[int] = mapped_column(BigInteger)
    group_key: Mapped[str | None] = mapped_column(String(64), nullable=True)
    kind: Mapped[str] = mapped_column(String(100))
    key: Mapped[str] = mapped_column(String(250))
    v_n: Mapped[int] = mapped_column(BigInteger)
    v_sum: Mapped[float | None] = mapped_column(Float, nullable=True)
    v_sq: Mapped[float | None] = mapped_column(Float, nullable=True)
    v_min: Mapped[float | None] = mapped_column(Float, nullable=True)
    v_max: Mapped[float | None] = mapped_column(Float, nullable=True)
    lo_n: Mapped[int] = mapped_column(BigInteger)
    lo_sum: Mapped[float | None] = mapped_column(Float, nullable=True)
    lo_sq: Mapped[float | None] = mapped_column(Float, nullable=True)
    lo_min: Mapped[float | None] = mapped_column(Float, nullable=True)
    lo_max: Mapped[float | None] = mapped_column(Float, nullable=True)
    hi_n: Mapped[int] = mapped_column(BigInteger)
    hi_sum: Mapped[float | None] = mapped_column(Float, nullable=True)
    hi_sq: Mapped[float | None] = mapped_column(Float, nullable=True)
    hi_min: Mapped[float | None] = mapped_column(Float, nullable=True)
    hi_max: Mapped[float | None] = mapped_column(Float, nullable=True)


class Claim(Base):
    """A claim of a paper tested on the project's runs (backend/claims/, migration 0030): its name and its
    versions (``claim_versions``: every edit adds one, ``version`` is the current one). ``locked_*``: the
    pre-registration, the version locked, the SHA-256 of its definition and when (null: never locked)."""

    __tablename__ = "claims"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    version: Mapped[int] = mapped_column(Integer, default=1)
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), nullable=True)
    locked_version: Mapped[int | None] = mapped_column(Integer, nullable=True)
    locked_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    locked_at: Mapped[datetime | None] = mapped_column(TS, nullable=True)
    locked_by_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    author: Mapped[User | None] = relationship(foreign_keys=[author_id])
    locked_by: Mapped[User | None] = relationship(foreign_keys=[locked_by_id])

    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_claims_name"),)


class ClaimVersion(Base):
    """One version of a claim's definition (``ClaimDefinition``, backend/claims/schemas.py) and the SHA-256
    of its canonical JSON; never changed once written."""

    __tablename__ = "claim_versions"
    claim_id: Mapped[int] = mapped_column(ForeignKey("claims.id", ondelete="CASCADE"), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    definition: Mapped[dict[str, Any]] = mapped_column(JSON)
    hash: Mapped[str] = mapped_column(String(64))
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    author: Mapped[User | None] = relationship()


class ClaimReview(Base):
    """A review of a claim (approved or changes requested), as an experiment's; every one is kept."""

    __tablename__ = "claim_reviews"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    claim_id: Mapped[int] = mapped_column(ForeignKey("claims.id", ondelete="CASCADE"), index=True)
    version: Mapped[int] = mapped_column(Integer)
    reviewer_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    state: Mapped[str] = mapped_column(String(32))
    body: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    reviewer: Mapped[User | None] = relationship()


class Report(Base):
    """A team's write-up of a result (backend/reports/): a title and a list of typed blocks (headings,
    markdown, figures and tables over runs, a kind's result view, callouts; ``blocks`` validated by
    ``backend.reports.schemas``). ``version`` counts the saves: an edit names the version it was made on,
    and one made on an older version is refused (409), so two editors never overwrite each other."""

    __tablename__ = "reports"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    title: Mapped[str] = mapped_column(String(200))
    blocks: Mapped[list[Any]] = mapped_column(JSON)
    version: Mapped[int] = mapped_column(Integer, default=1)
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    author: Mapped[User | None] = relationship()


class ReportRevision(Base):
    """A published, immutable copy of a report: its blocks and every block's data as resolved at
    publishing (``data``: the points, rows and results each figure or table showed, with its cut-off),
    so the revision renders the same whatever its runs do later. ``content_hash``: sha256 of the
    canonical JSON of title, blocks and data."""

    __tablename__ = "report_revisions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    report_id: Mapped[int] = mapped_column(ForeignKey("reports.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(String(200))
    blocks: Mapped[list[Any]] = mapped_column(JSON)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    content_hash: Mapped[str] = mapped_column(String(64))
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    author: Mapped[User | None] = relationship()

    __table_args__ = (UniqueConstraint("report_id", "number", name="uq_report_revisions_number"),)


class ReportFrozenData(Base):
    """The data a draft's frozen data block showed when the server took its cut-off (backend/reports/kept.py),
    served for that block while it keeps that cut-off, so a retry that rewrites the steps the cut-off covers
    does not reach the draft. ``key_hash``: sha256 of the canonical JSON of the block's cut-off and the
    fields that decide its data; ``size``: the data's bytes as canonical JSON; ``data`` null: it was over
    what a report keeps (the size says how much it was). One row a block: a new cut-off replaces it, a block
    no longer frozen (or gone) loses it, and it goes with its report."""

    __tablename__ = "report_frozen_data"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    report_id: Mapped[int] = mapped_column(ForeignKey("reports.id", ondelete="CASCADE"))
    block_id: Mapped[str] = mapped_column(String(64))
    key_hash: Mapped[str] = mapped_column(String(64))
    # none_as_null: a row without its data holds SQL NULL (not JSON null), which its query tests
    data: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True), nullable=True)
    size: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)

    __table_args__ = (UniqueConstraint("report_id", "block_id", name="uq_report_frozen_data_block"),)


class ReportComment(Base):
    """A comment anchored to one block of a report (by the block's id, which moves with the block)."""

    __tablename__ = "report_comments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    report_id: Mapped[int] = mapped_column(ForeignKey("reports.id", ondelete="CASCADE"), index=True)
    block_id: Mapped[str] = mapped_column(String(64))
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), nullable=True)
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    author: Mapped[User | None] = relationship()


class ReportReview(Base):
    """An approval (or a request for changes) of one published revision."""

    __tablename__ = "report_reviews"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    revision_id: Mapped[int] = mapped_column(
        ForeignKey("report_revisions.id", ondelete="CASCADE"), index=True
    )
    reviewer_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    state: Mapped[str] = mapped_column(String(32))
    body: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    reviewer: Mapped[User | None] = relationship()


class ReportShare(Base):
    """A read-only link to one revision for a reader without an account: the token is shown once and
    kept as its sha256 (as API tokens are), it expires, and it can be revoked; ``hide_authors`` hides
    every author's name from its reader (double-blind review)."""

    __tablename__ = "report_shares"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    revision_id: Mapped[int] = mapped_column(
        ForeignKey("report_revisions.id", ondelete="CASCADE"), index=True
    )
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    hide_authors: Mapped[bool] = mapped_column(Boolean, default=False)
    expires_at: Mapped[datetime] = mapped_column(TS)
    revoked_at: Mapped[datetime | None] = mapped_column(TS, nullable=True)
    created_by_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    created_by: Mapped[User | None] = relationship()
    revision: Mapped[ReportRevision] = relationship()
