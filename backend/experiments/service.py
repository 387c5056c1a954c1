"""Submitting experiments: validate every resolved run spec, then store the experiment and its runs.

Nothing is stored unless every combination of the sweep validates (one bad combination rejects the
whole request with 422 naming the combination and the field).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from sqlalchemy.orm import Session

from backend.activity import feed
from backend.auth.principal import Principal
from backend.datasets import repository as datasets_repo
from backend.errors import Invalid, NotFound, pydantic_errors
from backend.experiments import sweep as sweeps
from backend.experiments.schemas import ExperimentCreate, PreviewRun
from backend.experiments.sources import source_run_errors
from backend.groups.key import group_key
from backend.kinds.service import spec_class
from backend.models import Experiment, ExperimentTag, Run
from backend.projects import service as projects
from backend.secrets import repository as secrets_repo
from backend.secrets import service as secrets
from backend.settings import Settings
from worker.specs import manifest
from worker.specs.confine import dataset_references
from worker.specs.secrets import secret_destinations


def get_visible(
    session: Session, principal: Principal, experiment_id: int, minimum: str = "viewer"
) -> Experiment:
    """The experiment, if ``principal`` holds at least ``minimum`` in its project (404 or 403 otherwise)."""
    experiment = session.get(Experiment, experiment_id)
    if experiment is None:
        raise NotFound(f"experiment {experiment_id} not found")
    projects.require_role(session, principal, experiment.project_id, minimum, f"experiment {experiment_id}")
    return experiment


def written_order(dumped: Any, written: Any) -> Any:
    """``dumped`` (a validated spec, in its kind's field order, defaults filled) with the keys of every object
    in the order ``written`` has them, the keys it left to their defaults after, in the kind's order: a spec
    reads back in the order the researcher wrote it (on Postgres too: ``Run.spec_text``, migration 0025)."""
    if isinstance(dumped, dict) and isinstance(written, dict):
        ordered = {k: written_order(dumped[k], written[k]) for k in written if k in dumped}
        ordered.update((k, v) for k, v in dumped.items() if k not in ordered)
        return ordered
    if isinstance(dumped, list) and isinstance(written, list) and len(dumped) == len(written):
        return [written_order(d, w) for d, w in zip(dumped, written, strict=True)]
    return dumped


def _error_loc(err: dict[str, Any], index: int, params: dict[str, Any], swept: bool) -> list[str | int]:
    """Put a spec error under the sweep combination when a swept parameter caused it, else under spec."""
    field = [str(p) for p in err["loc"]]
    dotted = ".".join(field)
    if swept and any(dotted == p or dotted.startswith(p + ".") or p.startswith(dotted + ".") for p in params):
        return ["body", "sweep", index, *field]
    return ["body", "spec", *field]


def resolve(
    body: ExperimentCreate,
    settings: Settings,
    session: Session | None = None,
    principal: Principal | None = None,
    project_id: int | None = None,
) -> list[PreviewRun]:
    """Every run of the request, validated; raises Invalid with every error's field path. With a session,
    the runs a spec names as its source (``KindManifest.source_runs``) are checked too, and with a project
    the project secrets it names (``*_secret`` fields, worker/specs/secrets.py)."""
    cls = spec_class(body.kind, ["body", "kind"])
    source_runs = manifest(body.kind).source_runs if session is not None and principal is not None else {}
    spec = {k: v for k, v in body.spec.items() if k != "kind"}
    n = sweeps.count(body.sweep)
    if n > settings.max_runs_per_experiment:
        raise Invalid(
            f"the sweep expands to {n} runs; at most {settings.max_runs_per_experiment} per experiment",
            [{"loc": ["body", "sweep"], "msg": f"{n} runs exceed the limit", "type": "too_many_runs"}],
        )
    swept = body.sweep is not None
    runs: list[PreviewRun] = []
    errors: list[dict[str, Any]] = []
    for index, params in enumerate(sweeps.expand(body.sweep)):
        try:
            resolved = sweeps.apply(spec, params)
            model = cls.model_validate(resolved)
        except ValueError as exc:  # ValidationError is a ValueError; set_path raises a plain one
            if isinstance(exc, ValidationError):
                for e in pydantic_errors(exc, []):
                    loc = _error_loc(e, index, params, swept)
                    combo = f"combination {index + 1} {params}: " if swept else ""
                    errors.append({"loc": loc, "msg": combo + e["msg"], "type": e["type"]})
            else:
                msg = f"combination {index + 1} {params}: {exc}"
                errors.append({"loc": ["body", "sweep", index], "msg": msg, "type": "path"})
            if len(errors) >= 50:
                break
            continue
        dumped = written_order(model.model_dump(mode="json"), resolved)
        if session is not None and project_id is not None:
            destinations = secret_destinations(model)
            hosts = secrets_repo.hosts_by_name(session, project_id) if destinations else {}
            # a secret the project has not, or one sent to an endpoint outside its admin's hosts
            for path, msg, kind in secrets.destination_errors(hosts, destinations):
                loc = _error_loc({"loc": list(path)}, index, params, swept)
                errors.append({"loc": loc, "msg": msg, "type": kind})
            datasets = dataset_references(model)
            uploaded = datasets_repo.names(session, project_id) if datasets else set()
            for path, name in datasets.items():
                if name not in uploaded:
                    loc = _error_loc({"loc": list(path)}, index, params, swept)
                    msg = f"dataset {name!r} is not uploaded to this project (reasonlab datasets upload)"
                    errors.append({"loc": loc, "msg": msg, "type": "dataset_not_found"})
        if source_runs:
            assert session is not None and principal is not None
            for field, msg, kind in source_run_errors(session, principal, source_runs, dumped):
                loc = _error_loc({"loc": field}, index, params, swept)
                combo = f"combination {index + 1} {params}: " if swept else ""
                errors.append({"loc": loc, "msg": combo + msg, "type": kind})
            if errors:
                continue
        runs.append(PreviewRun(index=index, params=params, spec=dumped, queue=model.resources.queue))
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first["loc"])
        raise Invalid(f"{where}: {first['msg']}", errors)
    return runs


def create(session: Session, principal: Principal, body: ExperimentCreate, settings: Settings) -> Experiment:
    project = projects.resolve_project(session, principal, body.project)
    projects.require_role(session, principal, project.id, "member", f"project {project.name!r}")
    runs = resolve(body, settings, session, principal, project.id)  # validate all before storing anything
    cls = spec_class(body.kind, ["body", "kind"])
    base = cls.model_validate({k: v for k, v in body.spec.items() if k != "kind"}) if not body.sweep else None
    # a sweep's base spec is kept as written (swept fields may be missing), tagged with its kind
    stored = (
        written_order(base.model_dump(mode="json"), body.spec)
        if base is not None
        else {**body.spec, "kind": body.kind}
    )
    experiment = Experiment(
        project_id=project.id,
        name=body.name,
        description=body.description,
        kind=body.kind,
        spec=stored,
        sweep=body.sweep.model_dump(mode="json", exclude_none=True) if body.sweep else None,
        author_id=principal.user_id,
    )
    session.add(experiment)
    session.flush()
    for r in runs:
        session.add(
            Run(
                experiment_id=experiment.id,
                project_id=project.id,
                kind=body.kind,
                index=r.index,
                spec=r.spec,
                group_key=group_key(r.spec),
                params=r.params,
                queue=r.queue,
                status="queued",
                attempt=1,
                max_attempts=settings.default_max_attempts,
            )
        )
    for tag in sorted(set(body.tags)):
        session.add(ExperimentTag(experiment_id=experiment.id, tag=tag))
    feed.record(
        session,
        project.id,
        "submitted",
        f"submitted {body.kind} experiment {body.name!r} with {len(runs)} run(s)",
        actor_id=principal.user_id,
        experiment_id=experiment.id,
    )
    session.flush()
    return experiment
