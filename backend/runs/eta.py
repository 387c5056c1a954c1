"""A running run's ETA from its progress rate, kept by the API so that any page, opened at any time, has
one at once (the dashboard measured the rate from the progress events it had seen itself).

The rate is the current attempt's average: done moved from ``progress_base_done`` (its first progress
report, at ``progress_base_at``) to ``progress_done`` by ``progress_at`` (when done last moved). A resumed
attempt measures from its own first report, not from 0 at the run's first start; a new phase (another
total, or done going back) measures afresh; the time before a kind's first report (loading a model or
data) is not counted. Between two reports the ETA is a fixed time (``eta_at``) that clients count down to.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from backend.models import Run

# an estimate beyond this is no estimate (and would overflow a datetime)
MAX_ETA = timedelta(days=3650)


def progress_values(run: Run, done: int, total: int, message: str, now: datetime) -> dict[str, object]:
    """The columns a progress report (``done`` of ``total``, ``message``) of the attempt that owns ``run``
    sets (``run`` as read before it)."""
    values: dict[str, object] = {"progress_done": done, "progress_total": total, "progress_message": message}
    first = run.progress_base_at is None
    if first or total != run.progress_total or done < run.progress_done:
        values |= {"progress_base_at": now, "progress_base_done": done, "progress_at": now}
    elif done != run.progress_done:
        values["progress_at"] = now
    return values


# what a claim resets: the new attempt measures its own rate
NEW_ATTEMPT: dict[str, object] = {"progress_base_at": None, "progress_base_done": 0, "progress_at": None}


def eta_at(run: Run) -> datetime | None:
    """When the run should be done at its current attempt's rate; None unless it runs, has a total, and
    has moved since its attempt's first report."""
    if run.status != "running" or run.progress_total <= 0:
        return None
    if run.progress_base_at is None or run.progress_at is None:
        return None
    moved = run.progress_done - run.progress_base_done
    seconds = (run.progress_at - run.progress_base_at).total_seconds()
    if moved <= 0 or seconds <= 0:
        return None
    left = timedelta(seconds=max(0, run.progress_total - run.progress_done) * seconds / moved)
    return run.progress_at + left if left <= MAX_ETA else None
