"""The MLflow mirror's queries: its outbox (``mirror_runs``), its watermarks (``mirror_series``), the points
and results it copies, and what metric ingest tells it (``note_changes``).

Every read is bounded by what exists: a page of points is a primary-key range scan of one series after its
watermark (``LIMIT``), never a walk over a step range.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, true, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from backend import models
from backend.models import Metric, MetricLatest, MirrorRun, MirrorSeries, Result, Run, RunAttempt
from common import nonfinite

# a point's batch lookup: steps per statement (2 parameters besides them; far below both databases' limits)
_LOOKUP_CHUNK = 2000


def _insert(session: Session) -> Any:
    return postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert


# -- what metric ingest tells the mirror -----------------------------------------------------------------


def note_changes(
    session: Session,
    run_id: int,
    points: Mapping[tuple[str, int], tuple[float | None, Any]],
    latest: Mapping[str, int],
) -> dict[str, int]:
    """Before a batch that may overwrite stored points is written (the merge path of ingest): per key, the
    smallest step of the batch that is new below the series' latest step or carries another value than
    the stored point. Those keys' ``mirror_series`` rows get ``seq + 1`` and ``changed_from`` lowered to
    it, in the ingest's transaction, so the mirror never keeps a watermark over a point that changed under
    it (it rebuilds the run's MLflow run instead: MLflow appends a re-logged step). A re-sent point with
    the same value (a retry, a bit-exact resumed attempt) changes nothing. Points above the latest step
    are new and above every watermark: not looked up. Returns ``{key: smallest changed step}``."""
    by_key: dict[str, dict[int, float | None]] = {}
    for (key, step), (value, _) in points.items():
        top = latest.get(key)
        if top is not None and step <= top:
            by_key.setdefault(key, {})[step] = value
    changed: dict[str, int] = {}
    for key, batch in by_key.items():
        steps = sorted(batch)
        stored: dict[int, float | None] = {}
        for i in range(0, len(steps), _LOOKUP_CHUNK):
            chunk = steps[i : i + _LOOKUP_CHUNK]
            rows = session.execute(
                select(Metric.step, Metric.value, Metric.nonfinite).where(
                    Metric.run_id == run_id, Metric.key == key, Metric.step.in_(chunk)
                )
            )
            stored.update((int(step), nonfinite.to_float(value, code)) for step, value, code in rows)
        for step in steps:
            if step not in stored or not nonfinite.same(stored[step], batch[step]):
                changed[key] = step
                break
    if changed:
        ins = _insert(session)(MirrorSeries)
        values = [
            {"run_id": run_id, "key": k, "seq": 1, "changed_from": s} for k, s in sorted(changed.items())
        ]
        stmt = ins.values(values)
        session.execute(
            stmt.on_conflict_do_update(
                index_elements=[MirrorSeries.run_id, MirrorSeries.key],
                set_={
                    "seq": MirrorSeries.seq + 1,
                    "changed_from": func.min(
                        func.coalesce(MirrorSeries.changed_from, stmt.excluded.changed_from),
                        stmt.excluded.changed_from,
                    )
                    if session.get_bind().dialect.name == "sqlite"
                    else func.least(
                        func.coalesce(MirrorSeries.changed_from, stmt.excluded.changed_from),
                        stmt.excluded.changed_from,
                    ),
                },
            )
        )
    return changed


# -- the outbox ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PendingRun:
    """A run the mirror has work for: its outbox row and what it needs of the run."""

    run_id: int
    wanted: int
    mlflow_run_id: str | None
    generation: int
    attempt_tagged: int | None
    done: str | None
    finishing: str | None
    results_after: int
    artifacts_after: str
    failures: int
    error: str | None
    experiment_id: int
    kind: str
    status: str
    attempt: int
    worker: str | None
    params: dict[str, Any]
    spec: dict[str, Any]
    started_at: datetime | None  # its first claim (null: it never started); its MLflow run's start time
    created_at: datetime
    stale: bool
    params_rev: int  # runs.logged_params_rev: 0 while the run logged no params
    params_sent: int | None  # the revision its MLflow run has (None: none yet, or a new MLflow run)
    name: str | None  # runs.name: what a member named the run
    name_sent: str | None  # the name its MLflow run has (None: not recorded)

    @property
    def started(self) -> bool:
        return self.started_at is not None

    @property
    def params_due(self) -> bool:
        """The run logged params its MLflow run may not have."""
        return self.params_rev > 0 and self.params_sent != self.params_rev


def pending_runs(session: Session, now: datetime, limit: int) -> list[PendingRun]:
    """Up to ``limit`` runs with mirror work whose backoff is over, the least recently served first."""
    stmt = (
        select(
            MirrorRun.run_id,
            MirrorRun.wanted,
            MirrorRun.mlflow_run_id,
            MirrorRun.generation,
            MirrorRun.attempt,
            MirrorRun.done,
            MirrorRun.finishing,
            MirrorRun.results_after,
            MirrorRun.artifacts_after,
            MirrorRun.failures,
            MirrorRun.error,
            Run.experiment_id,
            Run.kind,
            Run.status,
            Run.attempt,
            Run.worker,
            Run.params,
            Run.spec,
            Run.started_at,
            Run.created_at,
            MirrorRun.stale,
            Run.logged_params_rev,
            MirrorRun.params_sent,
            Run.name,
            MirrorRun.name_sent,
        )
        .join(Run, Run.id == MirrorRun.run_id)
        .where(MirrorRun.pending == true())
        .where((MirrorRun.retry_at.is_(None)) | (MirrorRun.retry_at <= now))
        .order_by(MirrorRun.serviced_at.asc().nulls_first(), MirrorRun.run_id)
        .limit(limit)
    )
    return [
        PendingRun(
            run_id=r[0],
            wanted=int(r[1]),
            mlflow_run_id=r[2],
            generation=int(r[3]),
            attempt_tagged=r[4],
            done=r[5],
            finishing=r[6],
            results_after=int(r[7]),
            artifacts_after=r[8] or "",
            failures=int(r[9]),
            error=r[10],
            experiment_id=r[11],
            kind=r[12],
            status=r[13],
            attempt=int(r[14]),
            worker=r[15],
            params=dict(r[16] or {}),
            spec=dict(r[17] or {}),
            started_at=r[18],
            created_at=r[19],
            stale=bool(r[20]),
            params_rev=int(r[21]),
            params_sent=r[22],
            name=r[23],
            name_sent=r[24],
        )
        for r in session.execute(stmt)
    ]


def run_seconds(session: Session, run_id: int) -> float | None:
    """The seconds workers spent on the run over its attempts, downtime between them not counted: what
    ReasonLab shows as its run time (``RunPublic.run_seconds``, ``backend.models.run_seconds``). None: it
    never started. ``Mirror._finish`` makes its MLflow run's duration this."""
    run = session.get(Run, run_id)
    if run is None:
        return None
    return models.run_seconds(
        run, list(session.scalars(select(RunAttempt).where(RunAttempt.run_id == run_id)))
    )


def update_run(session: Session, run_id: int, **values: Any) -> None:
    session.execute(update(MirrorRun).where(MirrorRun.run_id == run_id).values(**values))


def record_mlflow_run(session: Session, run_id: int, mlflow_run_id: str) -> None:
    """The run's MLflow run, for the run page's "Open in MLflow"."""
    session.execute(update(Run).where(Run.id == run_id).values(mlflow_run_id=mlflow_run_id))


def renamed(session: Session, run_id: int) -> None:
    """The run was renamed: its MLflow run (if it has one) is due for the new name."""
    session.execute(
        update(MirrorRun)
        .where(MirrorRun.run_id == run_id, MirrorRun.mlflow_run_id.is_not(None))
        .values(pending=True, wanted=MirrorRun.wanted + 1)
    )


def clear_pending(session: Session, run_id: int, wanted: int) -> bool:
    """Nothing left to mirror, unless the run's status changed since ``wanted`` was read."""
    result = session.execute(
        update(MirrorRun)
        .where(MirrorRun.run_id == run_id, MirrorRun.wanted == wanted)
        .values(pending=False, failures=0, retry_at=None, error=None)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


# -- watermarks ---------------------------------------------------------------------------------------


@dataclass
class SeriesState:
    key: str
    latest: int  # the series' largest step on the platform
    sent_step: int | None
    seq: int
    changed_from: int | None


def ensure_series(session: Session, run_id: int) -> None:
    """A watermark row for every series of the run (one row per key of ``metric_latest``), made before
    the points are read, so that ingest's ``note_changes`` always has a row to bump."""
    ins = _insert(session)(MirrorSeries)
    source = select(MetricLatest.run_id, MetricLatest.key).where(MetricLatest.run_id == run_id, true())
    session.execute(
        ins.from_select(["run_id", "key"], source).on_conflict_do_nothing(
            index_elements=[MirrorSeries.run_id, MirrorSeries.key]
        )
    )


def series_states(session: Session, run_id: int) -> list[SeriesState]:
    stmt = (
        select(
            MetricLatest.key,
            MetricLatest.step,
            MirrorSeries.sent_step,
            MirrorSeries.seq,
            MirrorSeries.changed_from,
        )
        .join(
            MirrorSeries,
            (MirrorSeries.run_id == MetricLatest.run_id) & (MirrorSeries.key == MetricLatest.key),
        )
        .where(MetricLatest.run_id == run_id)
        .order_by(MetricLatest.key)
    )
    return [SeriesState(k, int(s), sent, int(seq), ch) for k, s, sent, seq, ch in session.execute(stmt)]


def series_state(session: Session, run_id: int, key: str) -> tuple[int | None, int, int | None]:
    """``(sent_step, seq, changed_from)`` of one series."""
    row = session.execute(
        select(MirrorSeries.sent_step, MirrorSeries.seq, MirrorSeries.changed_from).where(
            MirrorSeries.run_id == run_id, MirrorSeries.key == key
        )
    ).one()
    return row[0], int(row[1]), row[2]


def points(
    session: Session, run_id: int, key: str, after: int | None, upto: int, limit: int
) -> list[tuple[int, float | None, datetime]]:
    """Up to ``limit`` points of one series with ``after < step <= upto``, in step order: a range scan of
    the primary key (run, key, step), as long as the points that exist."""
    stmt = select(Metric.step, Metric.value, Metric.nonfinite, Metric.time).where(
        Metric.run_id == run_id, Metric.key == key, Metric.step <= upto
    )
    if after is not None:
        stmt = stmt.where(Metric.step > after)
    rows = session.execute(stmt.order_by(Metric.step).limit(limit))
    return [(int(s), nonfinite.to_float(v, k), t) for s, v, k, t in rows]


def advance(session: Session, run_id: int, key: str, sent_step: int, seq: int) -> bool:
    """Raise the series' watermark to ``sent_step`` if nothing changed it since ``seq`` was read (the
    points just sent are the stored ones); False otherwise."""
    result = session.execute(
        update(MirrorSeries)
        .where(MirrorSeries.run_id == run_id, MirrorSeries.key == key, MirrorSeries.seq == seq)
        .values(sent_step=sent_step, changed_from=None)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def mark_stale(session: Session, run_id: int, keys: Sequence[str]) -> None:
    """Points of these series already in MLflow changed while the run is active: the run's MLflow run is
    rebuilt once it finished (``stale``); their ``changed_from`` is taken into that."""
    session.execute(update(MirrorRun).where(MirrorRun.run_id == run_id).values(stale=True))
    session.execute(
        update(MirrorSeries)
        .where(MirrorSeries.run_id == run_id, MirrorSeries.key.in_(list(keys)))
        .values(changed_from=None)
    )


def reset_series(session: Session, run_id: int) -> None:
    """A rebuilt mirror: nothing of the run is in its new MLflow run yet."""
    session.execute(
        update(MirrorSeries).where(MirrorSeries.run_id == run_id).values(sent_step=None, changed_from=None)
    )


# -- results ------------------------------------------------------------------------------------------


def results_after(
    session: Session, run_id: int, after_id: int, limit: int
) -> Sequence[tuple[int, str, str | None, dict[str, Any]]]:
    """Up to ``limit`` of the run's result records with an id above ``after_id``, in id order."""
    stmt = (
        select(Result.id, Result.kind, Result.key, Result.payload)
        .where(Result.run_id == run_id, Result.id > after_id)
        .order_by(Result.id)
        .limit(limit)
    )
    return [(int(i), k, key, dict(p or {})) for i, k, key, p in session.execute(stmt)]


def touch(session: Session, run_id: int, *, finish: bool = True) -> None:
    """Points or results written to a run that is not running (a member's notebook adding to a finished
    run): its mirror has work again, its finish included (results and status; not for params alone)."""
    values: dict[str, Any] = {"pending": True, "wanted": MirrorRun.wanted + 1}
    if finish:
        values["done"] = None
    session.execute(update(MirrorRun).where(MirrorRun.run_id == run_id).values(**values))


# -- logged params ------------------------------------------------------------------------------------


def logged_params(session: Session, run_id: int) -> tuple[dict[str, Any], int]:
    """The params the run logged (flattened) and their revision (``runs.logged_params_rev``)."""
    params, rev = session.execute(
        select(Run.logged_params, Run.logged_params_rev).where(Run.id == run_id)
    ).one()
    return dict(params or {}), int(rev)
