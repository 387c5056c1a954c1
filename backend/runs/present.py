"""A run as the API answers it (``RunPublic``): its row with its tags, its metric summary (each key's latest
value) and its current attempt's timings, a page of runs in three queries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import Session

from backend.db import utcnow
from backend.models import Run
from backend.runs import attempts, repository
from backend.runs.schemas import RunPublic


def public(session: Session, runs: Sequence[Run], heartbeat_timeout: float) -> list[RunPublic]:
    """Each of ``runs`` as the API shows it, in their order."""
    ids = [r.id for r in runs]
    tags = repository.run_tags_of(session, ids)
    summaries = repository.metric_summaries(session, ids)
    timings = attempts.timings(session, runs, utcnow(), heartbeat_timeout)
    return [RunPublic.of(r, tags[r.id], summaries[r.id], timings[r.id]) for r in runs]


def one(session: Session, run: Run, heartbeat_timeout: float) -> RunPublic:
    return public(session, [run], heartbeat_timeout)[0]


def streamed(session: Session, run: Run, heartbeat_timeout: float) -> tuple[dict[str, Any], dict[str, int]]:
    """What a run's event stream compares from one poll to the next: the run as JSON (without its tags)
    and each metric key's latest step."""
    timing = attempts.timings(session, [run], utcnow(), heartbeat_timeout)[run.id]
    # each key's latest step and value are kept at ingest (metric_latest): no scan of the series
    latest = repository.latest_metrics(session, run.id)
    summary = {k: v for k, (_, v) in latest.items()}
    steps = {k: s for k, (s, _) in latest.items()}
    return RunPublic.of(run, None, summary, timing).model_dump(mode="json"), steps
