"""Open an external run (a new one, or a new attempt of one its script resumes by id).

An external run is a row of ``runs`` like any other (kind ``external``, its spec the script's config), so
it is listed, queried, grouped, charted and mirrored as a worker's runs are; it differs in who drives it:
its script holds the run token this answers and calls the runs' own routes (heartbeat, metrics, params,
logs, artifacts, finish) with it. It is created running and never queued, so no worker ever claims it;
the reaper fails it when its heartbeats stop (``backend.runs.service.reap``), and retry and release refuse
it: only its script can go on with it, by resuming it here.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from backend.activity import feed
from backend.auth.principal import Principal
from backend.db import utcnow
from backend.errors import Conflict, Invalid, NotFound
from backend.groups.key import group_key
from backend.models import Experiment, Project, Run, RunTag
from backend.projects import service as projects
from backend.runs import attempts
from backend.runs import repository as runs_repo
from backend.runs import service as runs
from backend.runs.service import NO_PROGRESS
from backend.tracking import repository
from backend.tracking.schemas import ExternalRunIn, Provenance
from common.runs import EXTERNAL_KIND, SYSTEM_METRIC_PREFIX


def _invalid(field: str, msg: str) -> Invalid:
    return Invalid(msg, [{"loc": ["body", field], "msg": msg, "type": "value_error"}])


def _driver(provenance: Provenance) -> str:
    """What the run page shows as the run's worker: the script's host."""
    return f"script on {provenance.host}" if provenance.host else "script"


def _stored(provenance: Provenance) -> dict[str, object]:
    return provenance.model_dump(mode="json", exclude_none=True)


def open_run(
    session: Session, principal: Principal, project_id: int, body: ExternalRunIn
) -> tuple[Run, bool]:
    """The opened run and whether it was resumed. A project member's (a viewer may not: 403; a project the
    caller is not in: 404). ``resume``: "never" opens a new run and takes no id; "allow" resumes ``id``
    when given and opens a new run otherwise; "must" resumes ``id``."""
    if session.get(Project, project_id) is None:  # a site admin is admin of every id: say it is none
        raise NotFound(f"project {project_id} not found")
    projects.require_role(session, principal, project_id, "member", f"project {project_id}")
    if body.resume == "never" and body.id is not None:
        raise _invalid("id", "an id resumes a run: send resume 'allow' or 'must' with it")
    if body.resume == "must" and body.id is None:
        raise _invalid("id", "resume 'must' needs the id of the run to resume")
    if body.id is not None:
        return resume(session, project_id, body.id, body), True
    return create(session, principal, project_id, body), False


def experiment_for(
    session: Session,
    principal: Principal,
    project_id: int,
    name: str,
    description: str = "runs logged by scripts through the SDK",
) -> Experiment:
    """The project's external experiment of that name, made if missing (the SDK's ``experiment=``)."""
    experiment = repository.experiment_named(session, project_id, name)
    if experiment is None:
        experiment = Experiment(
            project_id=project_id,
            name=name,
            description=description,
            kind=EXTERNAL_KIND,
            spec={},
            author_id=principal.user_id,
        )
        session.add(experiment)
        session.flush()
    return experiment


def create(
    session: Session,
    principal: Principal,
    project_id: int,
    body: ExternalRunIn,
    *,
    experiment: Experiment | None = None,
    queue: str = EXTERNAL_KIND,
    driver: str | None = None,
) -> Run:
    """A new running run in ``experiment`` (default: the external one ``body.experiment`` names). ``queue``
    says who drives it (``MLFLOW_QUEUE``: MLflow's client, which the reaper waits longer for); ``driver``
    is what the run page shows as its worker (default: the script's host)."""
    if experiment is None:
        experiment = experiment_for(session, principal, project_id, body.experiment)
    repository.lock_experiment(session, experiment.id)
    now = utcnow()
    run = Run(
        experiment_id=experiment.id,
        project_id=project_id,
        kind=EXTERNAL_KIND,
        index=repository.next_index(session, experiment.id),
        name=(body.name.strip() or None) if body.name is not None else None,
        spec=body.config,
        params=body.config,
        # a named group is the run's seed group; without one, its config without seeds is, as for any run
        group_key=group_key({"group": body.group}) if body.group else group_key(body.config),
        queue=queue,  # no worker serves it: the run is never queued
        status="running",
        attempt=1,
        max_attempts=1,
        worker=driver or _driver(body.provenance),
        heartbeat_at=now,
        started_at=now,
        provenance=_stored(body.provenance),
    )
    session.add(run)
    session.flush()
    for tag in sorted(set(body.tags)):
        session.add(RunTag(run_id=run.id, tag=tag))
    attempts.opened(session, run, run.worker or "script", now, how="opened by")
    feed.record(
        session,
        project_id,
        "started",
        f"external run {run.id} (#{run.index + 1}) started in {experiment.name!r} by {run.worker}",
        actor_id=principal.user_id,
        experiment_id=experiment.id,
        run_id=run.id,
    )
    session.flush()
    session.refresh(run)
    return run


def resume(
    session: Session, project_id: int, run_id: int, body: ExternalRunIn, driver: str | None = None
) -> Run:
    """Reopen the run as its next attempt, running again whatever it was (a crashed script's run, or one
    that finished and goes on). The previous attempt's token dies with it: a script still writing with it
    gets 409 (a lost lease). The run keeps its experiment, name and config; the new attempt's provenance
    replaces the old and ``tags`` are added."""
    run = session.get(Run, run_id)
    if run is None or run.project_id != project_id:
        raise NotFound(f"run {run_id} not found")
    if run.kind != EXTERNAL_KIND:
        raise Conflict(f"run {run_id} is executed by a worker: only an external run is resumed by its script")
    now = utcnow()
    before, was = run.attempt, run.status
    values: dict[str, object] = {
        "status": "running",
        "attempt": before + 1,
        "max_attempts": before + 1,
        "worker": driver or _driver(body.provenance),
        "heartbeat_at": now,
        "finished_at": None,
        "error": None,
        "cancel_requested": False,
        "provenance": _stored(body.provenance),
        **NO_PROGRESS,
    }
    if not runs_repo.transition(session, run.id, [Run.attempt == before, Run.status == was], values):
        session.refresh(run)
        raise Conflict(
            f"run {run_id} changed while it was resumed (it is {run.status}, attempt {run.attempt})"
        )
    if was == "running":  # its script went silent without the reaper noticing yet: that attempt is lost
        attempts.closed(session, run.id, before, "lost", now)
    session.refresh(run)
    have = set(runs_repo.run_tags_of(session, [run.id])[run.id])
    for tag in sorted(set(body.tags) - have):
        session.add(RunTag(run_id=run.id, tag=tag))
    attempts.opened(session, run, run.worker or "script", now, how="resumed by")
    feed.record(
        session,
        project_id,
        "resumed",
        f"external run {run.id} (#{run.index + 1}) resumed as attempt {run.attempt} (it was {was})",
        experiment_id=run.experiment_id,
        run_id=run.id,
    )
    session.flush()
    return run


def last_step(session: Session, run: Run) -> int | None:
    """The largest step of the run's own series (each key's latest is kept at ingest). The system samples
    (``system/*``) are left out: their steps count seconds since the run was created, not the script's."""
    latest = runs_repo.latest_metrics(session, run.id)
    steps = [step for key, (step, _) in latest.items() if not key.startswith(SYSTEM_METRIC_PREFIX)]
    return max(steps) if steps else None


def provenance(session: Session, principal: Principal, run_id: int) -> Provenance | None:
    """The run's provenance (any role in its project); null for a run a worker executes."""
    run = runs.get_visible(session, principal, run_id)
    return Provenance.model_validate(run.provenance) if run.provenance is not None else None
