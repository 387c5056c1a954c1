"""An experiment's runs as columns (``GET /experiments/{id}/runs-table``, ``schemas.RunsTable``).

Built from raw rows, straight into the answer's JSON: 10,000 runs through the ORM (a row object per run,
the JSON column decoded and three timestamps converted by SQLAlchemy's types, then a dict of summaries
per run) took ~650 ms in-process on SQLite under load, more than the rest of the experiment page
(docs/benchmarks.md, "Dashboard in the browser").

The encoded answer is kept (``EncodedTables``) and served again while the experiment's fingerprint is
unchanged: the runs' count, ids and ``table_rev`` and the latest metrics' count and ``rev`` (counters the
database keeps, migration 0006), two aggregate reads instead of 30,000 rows and their pivot.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Hashable
from datetime import UTC, datetime
from typing import Any

from pydantic_core import to_json
from sqlalchemy.orm import Session

from backend.experiments import repository
from backend.metrics import reads as metric_reads
from common.nonfinite import Shown, shown


def _sqlite_iso(text: str) -> str:
    """SQLite's stored naive UTC text (``2026-11-23 18:18:34.581926``) as the JSON of the aware datetime
    ``models.UTCDateTime`` reads from it (``2026-11-23T18:18:34.581926Z``; no fraction when it is zero),
    with string operations: parsing 30,000 of them into datetimes and writing them back cost ~15 ms of
    the answer's ~100."""
    if text.endswith(".000000"):
        text = text[:-7]
    return f"{text[:10]}T{text[11:]}Z"


def _times(values: list[Any]) -> list[Any]:
    """A timestamp column as ``models.UTCDateTime`` reads it, for the JSON of aware UTC datetimes: SQLite's
    raw value is the naive UTC text SQLAlchemy stored (written as that JSON directly), Postgres' an aware
    datetime."""
    return [
        _sqlite_iso(v)
        if isinstance(v, str) and len(v) >= 19 and "+" not in v
        else (
            datetime.fromisoformat(v)
            if isinstance(v, str)
            else v.replace(tzinfo=UTC)
            if v is not None and v.tzinfo is None
            else v
        )
        for v in values
    ]


class EncodedTables:
    """Encoded runs tables by experiment, each under the fingerprint it was built at, least recently used
    dropped past ``max_bytes``. Thread-safe (the API serves requests from a thread pool)."""

    def __init__(self, max_bytes: int = 64 << 20) -> None:
        self.max_bytes = max_bytes
        self._tables: OrderedDict[Hashable, tuple[Hashable, bytes]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable, fingerprint: Hashable) -> bytes | None:
        with self._lock:
            held = self._tables.get(key)
            if held is None or held[0] != fingerprint:
                return None
            self._tables.move_to_end(key)
            return held[1]

    def put(self, key: Hashable, fingerprint: Hashable, data: bytes) -> None:
        with self._lock:
            old = self._tables.pop(key, None)
            if old is not None:
                self._bytes -= len(old[1])
            if len(data) > self.max_bytes:
                return
            self._tables[key] = (fingerprint, data)
            self._bytes += len(data)
            while self._bytes > self.max_bytes:
                _, (_, dropped) = self._tables.popitem(last=False)
                self._bytes -= len(dropped)


TABLES = EncodedTables()


def fingerprint(session: Session, experiment_id: int) -> tuple[Any, ...]:
    """What the experiment's runs table depends on, in two aggregate reads: it changes when a run is
    added or removed, a shown column of a run changes, or a run's latest metric value does."""
    return (
        repository.run_table_rev(session, experiment_id),
        metric_reads.experiment_latest_rev(session, experiment_id),
    )


def cached_runs_table_json(session: Session, experiment_id: int, created_at: datetime) -> bytes:
    """``runs_table_json``, served from ``TABLES`` while the fingerprint holds. The key names the database
    and the experiment's creation time too: one process may serve several databases (tests do), where
    ids repeat. The fingerprint is read before the table, so a change committed between the two leaves a
    table newer than its fingerprint, which the next request's fingerprint replaces."""
    key = (str(session.get_bind().engine.url), experiment_id, created_at)
    seen = fingerprint(session, experiment_id)
    data = TABLES.get(key, seen)
    if data is None:
        data = runs_table_json(session, experiment_id)
        TABLES.put(key, seen, data)
    return data


def runs_table_json(session: Session, experiment_id: int) -> bytes:
    """``RunsTable`` of an experiment as JSON: one array per field, the i-th entry of each the i-th run
    in index order; ``params`` and ``summary`` one array per name (null where a run has none)."""
    rows = repository.run_columns(session, experiment_id)
    n = len(rows)
    ids, indexes, statuses, attempts, created, started, finished, params_text, names, released = (
        [list(c) for c in zip(*rows, strict=True)] if rows else [[] for _ in range(10)]
    )
    params: dict[str, list[Any]] = {}
    # every run's parameters in one parse (10,000 calls of json.loads cost 4x more)
    for i, values in enumerate(json.loads("[" + ",".join(t or "null" for t in params_text) + "]")):
        if not values:
            continue
        for name, value in values.items():
            column = params.get(name)
            if column is None:
                column = params[name] = [None] * n
            column[i] = value
    position = {run_id: i for i, run_id in enumerate(ids)}
    # run time without the downtime between attempts (as the run page's ``run_seconds``): the seconds of
    # each run's ended attempts and the start of its running one; null for a run without attempt rows
    ended_seconds: list[float | None] = [None] * n
    attempt_started: list[Any] = [None] * n
    for run_id, (seconds, start) in repository.run_attempt_times(session, experiment_id).items():
        at = position.get(run_id)
        if at is not None:
            ended_seconds[at], attempt_started[at] = seconds, start
    summary: dict[str, list[Shown]] = {}
    for run_id, key, value, code in metric_reads.experiment_latest(session, experiment_id):
        column = summary.get(key)
        if column is None:
            column = summary[key] = [None] * n
        column[position[run_id]] = shown(value, code)
    # a non-finite latest value is its label ("NaN"); null, not a NaN literal, whatever else comes
    return to_json(
        {
            "experiment_id": experiment_id,
            "id": ids,
            "index": indexes,
            "name": names,
            "status": statuses,
            "attempt": attempts,
            "released": released,
            "created_at": _times(created),
            "started_at": _times(started),
            "finished_at": _times(finished),
            "ended_seconds": ended_seconds,
            "attempt_started_at": _times(attempt_started),
            "params": dict(sorted(params.items())),
            "summary": dict(sorted(summary.items())),
        },
        inf_nan_mode="null",
    )
