from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session

from backend.db import utcnow
from backend.errors import TooLarge
from backend.groups import summary
from backend.metrics import points, reads
from backend.metrics.schemas import MetricBatch
from backend.mirror import repository as mirror
from backend.models import Run
from common import nonfinite


def ingest(session: Session, run: Run, batch: MetricBatch, limit: int) -> int:
    if len(batch.points) > limit:
        raise TooLarge(f"a metric batch holds at most {limit} points; this one has {len(batch.points)}")
    if not batch.points:
        return 0
    now = utcnow()
    # within one batch the last point of a (key, step) wins; a value as given (NaN and infinities too:
    # the storage splits them into a finite value and a kind, common/nonfinite.py)
    latest: dict[tuple[str, int], tuple[float | None, datetime]] = {}
    for p in batch.points:
        latest[(p.key, p.step)] = (float(p.value) if isinstance(p.value, str) else p.value, p.time or now)
    # per key: the first step (can the batch overwrite stored points?) and the latest point
    first: dict[str, int] = {}
    tops: dict[str, tuple[int, float | None]] = {}
    for (key, step), (value, _) in latest.items():
        top = tops.get(key)
        if top is None:
            first[key] = step
            tops[key] = (step, value)
            continue
        if step >= top[0]:
            tops[key] = (step, value)
        if step < first[key]:
            first[key] = step
    points.upsert_series(session, run.id, latest, first)
    # The run's summary: each key's value at its largest step (sorting by a final metric, the event
    # stream's latest steps). Its own rows, upserted where the step is not smaller than the stored one:
    # no lock on the run row, so concurrent batches into one run neither wait for nor deadlock on it.
    points.upsert_latest(session, run.id, tops)
    points.refresh_extremes(session, run.id, list(tops))  # min() and max() of the query language
    if run.status != "running":  # a finished run written to (a notebook): its MLflow mirror has work
        mirror.touch(session, run.id)
        # and a seed-group summary covering it is no longer exact (after the writes: groups/summary.py)
        summary.metric_written(session, run)
    return len(batch.points)


def _utc(value: datetime | str | None) -> datetime | None:
    """A bucket's time as an aware UTC datetime (SQLite's raw rows give naive UTC text)."""
    if value is None:
        return None
    t = datetime.fromisoformat(value) if isinstance(value, str) else value
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def _bucket(r: Sequence[Any]) -> dict[str, Any]:
    """A row ``(s0, s1, min, max, last, n, non-finite n, last's kind[, time])`` of ``reads.buckets``."""
    return {
        "step_start": r[0],
        "step_end": r[1],
        "min": r[2],
        "max": r[3],
        "last": r[4],
        "count": r[5],
        "time": None,
        "nonfinite": r[6],
        "last_nonfinite": nonfinite.label(r[7]),
    }


def _timed_bucket(r: Sequence[Any]) -> dict[str, Any]:
    out = _bucket(r)
    out["time"] = _utc(r[8])
    return out


def query(
    session: Session,
    run: Run,
    keys: list[str],
    max_points: int,
    step_min: int | None,
    step_max: int | None,
    with_time: bool = False,
) -> dict[str, dict[str, Any]]:
    """``{key: Series}`` with each series as plain data (dicts and lists) in the shape and field order of
    ``schemas.Series``, for ``pydantic_core.to_json``: 1,000 buckets a series as pydantic objects cost
    more than the database's reads (~10 of a ~25 ms query over 1,000,000 points, bench/metric_query.py)."""
    out: dict[str, dict[str, Any]] = {}
    bucket = _timed_bucket if with_time else _bucket
    for key in keys or reads.keys(session, run.id):
        smin, smax, total = reads.head(session, run.id, key)
        if smin is None or smax is None:
            out[key] = {"total_points": 0, "step_min": None, "step_max": None, "buckets": []}
            continue
        lo = max(smin, step_min) if step_min is not None else smin
        hi = min(smax, step_max) if step_max is not None else smax
        rows = reads.buckets(session, run.id, key, lo, hi, max_points, with_time) if lo <= hi else []
        out[key] = {
            "total_points": total,
            "step_min": smin,
            "step_max": smax,
            "buckets": [bucket(r) for r in rows],
        }
    return out
