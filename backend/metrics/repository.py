"""Metric storage and the downsampling query.

Points are upserted on (run, key, step), so a resumed run or a re-sent batch overwrites instead of
duplicating. Downsampling is one SQL statement per key: equal step-range buckets with min, max, count
and the value at the bucket's last step, so a spike survives in ``max`` whatever the zoom.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from backend.models import Metric

_BUCKETS = text(
    """
    WITH pts AS (
        SELECT step, value, (step - :lo) / :width AS bucket
        FROM metric
        WHERE run_id = :run_id AND key = :key AND step >= :lo AND step <= :hi
    ),
    agg AS (
        SELECT bucket, MIN(step) AS s0, MAX(step) AS s1, MIN(value) AS vmin, MAX(value) AS vmax, COUNT(*) AS n
        FROM pts GROUP BY bucket
    )
    SELECT agg.s0, agg.s1, agg.vmin, agg.vmax, m.value AS vlast, agg.n
    FROM agg JOIN metric m ON m.run_id = :run_id AND m.key = :key AND m.step = agg.s1
    ORDER BY agg.bucket
    """
)


def upsert(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        pg = postgresql.insert(Metric)
        stmt = pg.on_conflict_do_update(
            index_elements=["run_id", "key", "step"], set_={"value": pg.excluded.value, "time": pg.excluded.time}
        )
    else:
        lite = sqlite.insert(Metric)
        stmt = lite.on_conflict_do_update(
            index_elements=["run_id", "key", "step"], set_={"value": lite.excluded.value, "time": lite.excluded.time}
        )
    for i in range(0, len(rows), 5000):
        session.execute(stmt, list(rows[i : i + 5000]))


def keys(session: Session, run_id: int) -> list[str]:
    return list(session.scalars(select(Metric.key).where(Metric.run_id == run_id).distinct().order_by(Metric.key)))


def extent(session: Session, run_id: int, key: str) -> tuple[int | None, int | None, int]:
    row = session.execute(
        select(func.min(Metric.step), func.max(Metric.step), func.count()).where(
            Metric.run_id == run_id, Metric.key == key
        )
    ).one()
    return row[0], row[1], int(row[2])


def buckets(session: Session, run_id: int, key: str, lo: int, hi: int, max_points: int) -> list[tuple[Any, ...]]:
    width = max(1, math.ceil((hi - lo + 1) / max_points))
    params = {"run_id": run_id, "key": key, "lo": lo, "hi": hi, "width": width}
    return [tuple(r) for r in session.execute(_BUCKETS, params)]


def latest_steps(session: Session, run_id: int) -> dict[str, int]:
    stmt = select(Metric.key, func.max(Metric.step)).where(Metric.run_id == run_id).group_by(Metric.key)
    return {k: int(s) for k, s in session.execute(stmt)}
