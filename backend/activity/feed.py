"""The project activity feed: every row is written by ``record`` (read by the reviews domain's feed route).

Rows are added to the caller's session, never committed here: they land with the change they describe,
when the request (or the reaper's scope) commits.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from backend.models import Activity


def record(
    session: Session,
    project_id: int,
    type_: str,
    message: str,
    *,
    actor_id: int | None = None,
    experiment_id: int | None = None,
    run_id: int | None = None,
    claim_id: int | None = None,
) -> Activity:
    """Add one feed row: ``type_`` is what happened (submitted, commented, reviewed, finished, failed,
    cancelled; for a claim: claimed, edited, locked, commented, reviewed); ``actor_id`` is None when the
    system did it (a worker finishing, the reaper)."""
    row = Activity(
        project_id=project_id,
        type=type_,
        actor_id=actor_id,
        experiment_id=experiment_id,
        run_id=run_id,
        claim_id=claim_id,
        message=message,
    )
    session.add(row)
    return row
