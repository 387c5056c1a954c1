"""An experiment as the API answers it: ``ExperimentPublic`` (its row with its run counts by status, tags,
latest review state and the caller's star, a page of experiments in four queries) and ``ExperimentDetail``
(that and its runs, each as ``RunPublic``)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from backend.auth.principal import Principal
from backend.experiments import repository
from backend.experiments.schemas import ExperimentDetail, ExperimentPublic
from backend.models import Experiment
from backend.runs import present as runs_present


def public(session: Session, principal: Principal, experiments: list[Experiment]) -> list[ExperimentPublic]:
    ids = [e.id for e in experiments]
    counts = repository.status_counts(session, ids)
    tags = repository.tags_of(session, ids)
    reviews = repository.review_states(session, ids)
    stars = repository.starred(session, principal.user_id, ids)
    return [
        ExperimentPublic(
            id=e.id,
            project_id=e.project_id,
            project=e.project.name,
            name=e.name,
            description=e.description,
            kind=e.kind,
            spec=e.spec,
            sweep=e.sweep,
            author=e.author.username if e.author else None,
            created_at=e.created_at,
            run_count=sum(counts[e.id].values()),
            status_counts=counts[e.id],
            tags=tags[e.id],
            review_state=reviews.get(e.id),
            starred=e.id in stars,
        )
        for e in experiments
    ]


def detail(
    session: Session,
    principal: Principal,
    heartbeat_timeout: float,
    experiment: Experiment,
    with_runs: bool = True,
) -> ExperimentDetail:
    """The experiment and, with ``with_runs``, its runs (else none: its counts still say how many)."""
    base = public(session, principal, [experiment])[0]
    if not with_runs:
        return ExperimentDetail(**base.model_dump(), runs=[])
    runs = runs_present.public(session, repository.runs_of(session, experiment.id), heartbeat_timeout)
    return ExperimentDetail(**base.model_dump(), runs=runs)
