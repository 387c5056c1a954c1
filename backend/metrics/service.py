from __future__ import annotations

import math
from typing import Any

from sqlalchemy.orm import Session

from backend.db import utcnow
from backend.errors import TooLarge
from backend.metrics import repository
from backend.metrics.schemas import Bucket, MetricBatch, Series
from backend.models import Run


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def ingest(session: Session, run: Run, batch: MetricBatch, limit: int) -> int:
    if len(batch.points) > limit:
        raise TooLarge(f"a metric batch holds at most {limit} points; this one has {len(batch.points)}")
    if not batch.points:
        return 0
    now = utcnow()
    latest: dict[tuple[str, int], dict[str, Any]] = {}
    for p in batch.points:  # within one batch the last point of a (key, step) wins
        latest[(p.key, p.step)] = {
            "run_id": run.id, "key": p.key, "step": p.step, "value": _finite(p.value), "time": p.time or now
        }
    repository.upsert(session, list(latest.values()))
    # The run's summary keeps each key's value at its largest step (for sorting by a final metric).
    summary = dict(run.summary or {})
    steps = dict(summary.pop("_steps", {}) or {})
    for (key, step), row in latest.items():
        if step >= steps.get(key, -1):
            steps[key] = step
            summary[key] = _finite(row["value"])
    summary["_steps"] = steps
    run.summary = summary
    return len(batch.points)


def query(
    session: Session, run: Run, keys: list[str], max_points: int, step_min: int | None, step_max: int | None
) -> dict[str, Series]:
    out: dict[str, Series] = {}
    for key in keys or repository.keys(session, run.id):
        smin, smax, total = repository.extent(session, run.id, key)
        if smin is None or smax is None:
            out[key] = Series(total_points=0, step_min=None, step_max=None, buckets=[])
            continue
        lo = max(smin, step_min) if step_min is not None else smin
        hi = min(smax, step_max) if step_max is not None else smax
        rows = repository.buckets(session, run.id, key, lo, hi, max_points) if lo <= hi else []
        out[key] = Series(
            total_points=total,
            step_min=smin,
            step_max=smax,
            buckets=[
                Bucket(step_start=s0, step_end=s1, min=_finite(a), max=_finite(b), last=_finite(c), count=n)
                for s0, s1, a, b, c, n in rows
            ],
        )
    return out
