"""What the MLflow-compatible routes do, in the platform's terms (the mapping: ``backend/mlflowcompat``).

Every call names its project in the URL and is authorized there: reads need a viewer, writes a member. A
run MLflow's client opens is an external run (``backend.tracking.service``) driven by that client: its
writes go through the platform's own services (metric ingest, logged params, run names and labels, the
artifact store), so the run is charted, queried, grouped and mirrored like any other.
"""

from __future__ import annotations

import math
import re
import uuid
from datetime import UTC, datetime, timedelta

from pydantic import ValidationError
from sqlalchemy.orm import Session

from backend.activity import feed
from backend.artifacts import service as artifacts
from backend.auth.principal import Principal
from backend.db import as_utc, utcnow
from backend.errors import ApiError, Conflict, Invalid, NotFound, pydantic_errors
from backend.http import cursor
from backend.http.deps import MAX_ID
from backend.metrics import service as metrics
from backend.metrics.schemas import MetricBatch, MetricPoint
from backend.mlflowcompat import filters, repository
from backend.mlflowcompat.filters import invalid
from backend.mlflowcompat.schemas import (
    CreateExperimentIn,
    CreateRunIn,
    ExperimentOut,
    FileOut,
    MetricIn,
    MetricOut,
    ParamIn,
    RunDataOut,
    RunInfoOut,
    RunOut,
    SearchExperimentsIn,
    SearchRunsIn,
    TagIn,
    TagOut,
    UpdateRunIn,
)
from backend.models import Experiment, ExperimentTag, Project, Run, RunTag
from backend.projects import service as projects
from backend.runs import attempts
from backend.runs import params as run_params
from backend.runs import repository as runs_repo
from backend.runs import service as runs
from backend.runs.schemas import MAX_RUN_NAME, FinishIn, ParamsIn
from backend.store import ArtifactStore
from backend.tracking import repository as tracking_repo
from backend.tracking import service as tracking
from backend.tracking.schemas import MAX_MLFLOW_TAGS, ExternalRunIn, Provenance
from common.mlflow_names import EXPERIMENT_TAGS, MLFLOW_STATUS, param_values
from common.runs import EXTERNAL_KIND, MLFLOW_QUEUE

DEFAULT_EXPERIMENT_ID = "0"  # what MLflow's client logs into when no experiment is set
DEFAULT_EXPERIMENT = "Default"  # the project's external experiment that id names
PAGE = 1000  # runs or experiments a search answers at most (a page; the client asks for the next)
HISTORY_PAGE = 25_000  # points of a metric history a request answers at most (the client pages)
HEARTBEAT_EVERY = timedelta(seconds=1)  # a write refreshes its run's heartbeat at most this often
MAX_LABEL = 100  # a label's characters (run_tags.tag, experiment_tags.tag)
MAX_RUN_LABELS = 50  # labels a run opens with (ExternalRunIn.tags)
ARTIFACTS = "outputs"  # the platform's folder a run's MLflow artifacts live in
MLFLOW_PREFIX = "mlflow."  # MLflow's own tags (its client's, its UI's)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_HEX = re.compile(r"^[0-9a-fA-F]{4,64}$")
_ARTIFACT_PATH = re.compile(r"^([0-9]{1,10})/([0-9]{1,10})/artifacts(?:/(.*))?$")
_STATUS_NAMES = {"running": "RUNNING", "queued": "SCHEDULED", **MLFLOW_STATUS}


class MlflowError(ApiError):
    """An error MLflow's client knows by its own code (``RESOURCE_ALREADY_EXISTS``, ...): the edge passes the
    code on unchanged (``backend.mlflowcompat.errors``)."""

    def __init__(self, status_code: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status_code = status_code
        self.code = code


# -- ids, names, times --------------------------------------------------------------------------------------


def parse_id(raw: str, field: str) -> int:
    """An MLflow id (a string) as the platform's id; 400 naming ``field`` unless it is one."""
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 10 and 1 <= int(raw) <= MAX_ID):
        raise invalid(field, f"{raw[:50]!r} is not an id here (a decimal number from 1 to {MAX_ID})")
    return int(raw)


def millis(moment: datetime) -> int:
    """Milliseconds since the epoch, exactly (no float rounding)."""
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return (aware - _EPOCH) // timedelta(milliseconds=1)


def _value(stored: float | None) -> float:
    """A stored point's value as MLflow reads it: a gap (None, which MLflow has not) is NaN."""
    return math.nan if stored is None else stored


def from_millis(ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=ms)


def artifact_location(experiment_id: int) -> str:
    return f"mlflow-artifacts:/{experiment_id}"


def artifact_uri(run: Run) -> str:
    """Where MLflow's client sends a run's artifacts: ``mlflow-artifacts:/<experiment>/<run>/artifacts``,
    which it resolves against its tracking URI (the artifact proxy routes, ``artifacts_of`` below)."""
    return f"{artifact_location(run.experiment_id)}/{run.id}/artifacts"


def _name(raw: str | None) -> str | None:
    """An MLflow run name as the platform keeps it: trimmed, cut to its 200 characters, empty is none."""
    if raw is None:
        return None
    return raw.strip()[:MAX_RUN_NAME].strip() or None


def label(key: str, value: str, field: str) -> str:
    """The label that holds the tag ``key`` = ``value``: ``key=value`` (``key`` alone for an empty value)."""
    text = key if value == "" else f"{key}={value}"
    if len(text) > MAX_LABEL:
        raise invalid(
            field,
            f"tag {key[:50]!r}: a tag is kept as the label '<key>=<value>', at most {MAX_LABEL} characters; "
            f"this one has {len(text)}",
        )
    return text


def tag_of(text: str) -> tuple[str, str]:
    """A label as an MLflow tag: ``key=value`` is (key, value); a label without ``=`` is (label, "")."""
    key, _, value = text.partition("=")
    return key, value


def _validated(build: type[ExternalRunIn] | type[Provenance], field: str, **values: object) -> object:
    try:
        return build(**values)
    except ValidationError as exc:
        errors = pydantic_errors(exc, ["body", field])
        raise Invalid(f"{field}: {errors[0]['msg']}" if errors else field, errors) from None


# -- projects and experiments ---------------------------------------------------------------------------------


def project(session: Session, principal: Principal, name: str, minimum: str) -> Project:
    """The URL's project when the caller has ``minimum`` there (404 when it is none the caller sees)."""
    found = repository.project_named(session, name)
    if found is None:
        raise NotFound(f"project {name!r} not found")
    projects.require_role(session, principal, found.id, minimum, f"project {name!r}")
    return found


def experiment_of(
    session: Session,
    project_: Project,
    raw: str,
    field: str = "experiment_id",
    principal: Principal | None = None,
) -> Experiment:
    """The project's experiment of an MLflow id; ``0`` is its Default experiment (an external one, made by
    the first run logged into it: pass ``principal`` to make it)."""
    if raw == DEFAULT_EXPERIMENT_ID:
        found = tracking_repo.experiment_named(session, project_.id, DEFAULT_EXPERIMENT)
        if found is None:
            if principal is None:
                raise NotFound(
                    f"experiment 0 (the project's {DEFAULT_EXPERIMENT!r}) not found: its first run makes it"
                )
            found = tracking.experiment_for(
                session,
                principal,
                project_.id,
                DEFAULT_EXPERIMENT,
                "runs MLflow's client logged without an experiment",
            )
        return found
    experiment = session.get(Experiment, parse_id(raw, field))
    if experiment is None or experiment.project_id != project_.id:
        raise NotFound(f"experiment {raw} not found in project {project_.name!r}")
    return experiment


def experiment_ids(session: Session, project_: Project, raws: list[str], field: str) -> list[int]:
    """The project's experiments of MLflow ids (404 for one it has not); ``0`` before the Default experiment
    is made names none (it has no runs yet)."""
    ids: list[int] = []
    for i, raw in enumerate(raws):
        if raw == DEFAULT_EXPERIMENT_ID:
            found = tracking_repo.experiment_named(session, project_.id, DEFAULT_EXPERIMENT)
            ids += [found.id] if found is not None else []
        else:
            ids.append(experiment_of(session, project_, raw, f"{field}[{i}]").id)
    return ids


def experiment_named(session: Session, project_: Project, name: str) -> Experiment:
    """MLflow's experiment names are the project's external experiments' (the SDK's ``experiment=``)."""
    found = tracking_repo.experiment_named(session, project_.id, name)
    if found is None:
        raise NotFound(f"experiment {name!r} not found in project {project_.name!r}")
    return found


def present_experiments(session: Session, experiments: list[Experiment]) -> list[ExperimentOut]:
    labels = repository.experiment_labels(session, [e.id for e in experiments])
    out = []
    for e in experiments:
        tags = [TagOut(key=k, value=v) for k, v in EXPERIMENT_TAGS.items()]
        tags += [TagOut(key=k, value=v) for k, v in map(tag_of, labels[e.id])]
        if e.description:
            tags.append(TagOut(key="mlflow.note.content", value=e.description))
        created = millis(e.created_at)
        out.append(
            ExperimentOut(
                experiment_id=str(e.id),
                name=e.name,
                artifact_location=artifact_location(e.id),
                creation_time=created,
                last_update_time=created,
                tags=tags,
            )
        )
    return out


def set_experiment_tags(session: Session, experiment: Experiment, tags: list[TagIn], field: str) -> None:
    """``mlflow.note.content`` is the experiment's description; MLflow's other own tags (its UI's) are not
    kept; any other tag is the label ``key=value``."""
    for i, tag in enumerate(tags):
        if tag.key == "mlflow.note.content":
            experiment.description = tag.value
        elif not tag.key.startswith(MLFLOW_PREFIX):
            text = label(tag.key, tag.value, f"{field}[{i}]" if field == "tags" else field)
            old = repository.experiment_labels_of_key(session, experiment.id, tag.key)
            repository.delete_experiment_labels(session, experiment.id, [t for t in old if t != text])
            if text not in old:
                session.add(ExperimentTag(experiment_id=experiment.id, tag=text))
    session.flush()


def create_experiment(
    session: Session, principal: Principal, project_: Project, body: CreateExperimentIn
) -> Experiment:
    if tracking_repo.experiment_named(session, project_.id, body.name) is not None:
        raise MlflowError(
            400,
            "RESOURCE_ALREADY_EXISTS",
            f"experiment {body.name!r} already exists in project {project_.name!r}",
        )
    experiment = tracking.experiment_for(
        session, principal, project_.id, body.name, "runs logged by MLflow's client"
    )
    set_experiment_tags(session, experiment, body.tags, "tags")
    return experiment


def _offset(token: str | None) -> int:
    try:
        return cursor.decode_int(token, "offset") or 0
    except Invalid:
        raise invalid("page_token", "not a page_token this server answered") from None


def search_experiments(
    session: Session, project_: Project, body: SearchExperimentsIn
) -> tuple[list[Experiment], str | None]:
    if (body.view_type or "ACTIVE_ONLY").upper() == "DELETED_ONLY":
        return [], None
    clauses = filters.parse_filter(body.filter)
    orders = filters.parse_order(body.order_by)
    offset, limit = _offset(body.page_token), min(body.max_results or PAGE, PAGE)
    rows = repository.search_experiments(session, project_.id, clauses, orders, offset, limit + 1)
    return rows[:limit], cursor.encode({"offset": offset + limit}) if len(rows) > limit else None


# -- runs -----------------------------------------------------------------------------------------------------


def project_run(session: Session, principal: Principal, name: str, raw: str, minimum: str) -> Run:
    """``run_of(project(...), raw)``, the project and the run read in one query: the same answers in the
    same order (the project's 404, the role's 403, the id's 400, the run's 404)."""
    try:
        run_id = parse_id(raw, "run_id")
    except ApiError:  # the project's answers come first: the two steps, as they were
        return run_of(session, project(session, principal, name, minimum), raw)
    found, run = repository.project_and_run(session, name, run_id)
    if found is None:
        raise NotFound(f"project {name!r} not found")
    projects.require_role(session, principal, found.id, minimum, f"project {name!r}")
    if run is None:
        raise NotFound(f"run {raw} not found in project {found.name!r}")
    return run


def run_of(session: Session, project_: Project, raw: str, field: str = "run_id") -> Run:
    run = session.get(Run, parse_id(raw, field))
    if run is None or run.project_id != project_.id:
        raise NotFound(f"run {raw} not found in project {project_.name!r}")
    return run


def _external(run: Run, what: str) -> None:
    if run.kind != EXTERNAL_KIND:
        raise Conflict(f"run {run.id} is executed by a worker: only its worker {what}")


def alive(session: Session, run: Run) -> None:
    """A write to an external run that is running is its heartbeat (MLflow's client sends none of its own);
    written at most every ``HEARTBEAT_EVERY``, so most writes leave the run's row alone."""
    if run.kind != EXTERNAL_KIND or run.status != "running":
        return
    now = utcnow()
    # the run's row was just read: a heartbeat it shows as recent needs no round trip to find so (the
    # UPDATE's own condition still decides against a concurrent write)
    if run.heartbeat_at is not None and as_utc(run.heartbeat_at) >= now - HEARTBEAT_EVERY:
        return
    recent = Run.heartbeat_at >= now - HEARTBEAT_EVERY
    runs_repo.transition(
        session, run.id, [Run.status == "running", Run.attempt == run.attempt, ~recent], {"heartbeat_at": now}
    )


def _driver(system: dict[str, str]) -> str:
    """What the run page shows as the run's worker."""
    user = system.get("mlflow.user")
    return f"MLflow client of {user}"[:300] if user else "MLflow client"


def create_run(session: Session, principal: Principal, project_: Project, body: CreateRunIn) -> Run:
    """A new external run, running, in the experiment (``0`` or none: the project's Default). Its name is
    ``run_name`` (or the tag ``mlflow.runName``); MLflow's own tags (``mlflow.user``, ``mlflow.source.*``)
    are its provenance; any other tag a label ``key=value``."""
    experiment = experiment_of(
        session, project_, body.experiment_id or DEFAULT_EXPERIMENT_ID, principal=principal
    )
    if experiment.kind != EXTERNAL_KIND:
        raise invalid(
            "experiment_id",
            f"experiment {experiment.id} runs kind {experiment.kind!r} from specs: MLflow's client logs into "
            "an experiment of its own (create_experiment, or set_experiment with a new name)",
        )
    system = {t.key: t.value for t in body.tags if t.key.startswith(MLFLOW_PREFIX)}
    name = body.run_name if body.run_name is not None else system.get("mlflow.runName")
    system.pop("mlflow.runName", None)
    if len(system) > MAX_MLFLOW_TAGS:
        raise invalid("tags", f"at most {MAX_MLFLOW_TAGS} of MLflow's own tags (mlflow.*)")
    labels: dict[str, str] = {}
    for i, tag in enumerate(body.tags):
        if not tag.key.startswith(MLFLOW_PREFIX):
            labels[tag.key] = label(tag.key, tag.value, f"tags[{i}]")
    if len(labels) > MAX_RUN_LABELS:
        raise invalid("tags", f"at most {MAX_RUN_LABELS} tags besides MLflow's own (mlflow.*)")
    commit = system.get("mlflow.source.git.commit", "")
    provenance = _validated(
        Provenance,
        "tags",
        command=(system.get("mlflow.source.name") or None),
        git_commit=commit if _HEX.match(commit) else None,
        mlflow_tags=system,
    )
    opened = _validated(
        ExternalRunIn,
        "tags",
        experiment=experiment.name,
        name=_name(name),
        config={},
        tags=list(labels.values()),
        # its params come after it opens (logged params): no config says which runs are seeds of one, so
        # each MLflow run is a seed group of its own
        group=f"mlflow run {uuid.uuid4().hex}",
        provenance=provenance,
    )
    assert isinstance(opened, ExternalRunIn)
    return tracking.create(
        session,
        principal,
        project_.id,
        opened,
        experiment=experiment,
        queue=MLFLOW_QUEUE,
        driver=_driver(system),
    )


def update_run(session: Session, principal: Principal, project_: Project, run: Run, body: UpdateRunIn) -> Run:
    """Rename the run (``run_name``) and set its status: ``RUNNING`` keeps a running run alive and reopens an
    ended one as its next attempt (``mlflow.start_run(run_id=...)``); ``FINISHED``, ``FAILED``, ``KILLED`` end
    it succeeded, failed, cancelled (``set_terminated``), or correct how an ended run ended (a run the
    reaper crashed while its client was silent, which then finishes)."""
    if body.run_name is not None:
        run = runs.rename(session, principal, run, _name(body.run_name))
    if body.status is None:
        alive(session, run)
        return run
    status = body.status.upper()
    if status not in ("RUNNING", "FINISHED", "FAILED", "KILLED"):
        raise invalid("status", f"{body.status!r}: a run is set RUNNING, FINISHED, FAILED or KILLED")
    _external(run, "starts and ends it")
    if status == "RUNNING":
        if run.status == "running":
            alive(session, run)
            return run
        stored = Provenance.model_validate(run.provenance or {})
        again = ExternalRunIn(experiment=run.experiment.name, id=run.id, resume="must", provenance=stored)
        return tracking.resume(session, project_.id, run.id, again, driver=run.worker)
    target = repository.PLATFORM_STATUS[status]
    if run.status == "running":
        return runs.finish(session, run, FinishIn(attempt=run.attempt, status=target))  # type: ignore[arg-type]
    if run.status == target:
        return run
    return _correct_end(session, principal, run, target)


def _correct_end(session: Session, principal: Principal, run: Run, target: str) -> Run:
    """An ended run its client ends otherwise: the client's word on how its script ended is the last."""
    was, now = run.status, utcnow()
    values: dict[str, object] = {"status": target, "finished_at": now}
    if target == "succeeded":
        values["error"] = None
    if not runs_repo.transition(session, run.id, [Run.status == was, Run.attempt == run.attempt], values):
        session.refresh(run)
        raise Conflict(f"run {run.id} changed meanwhile (it is {run.status}, attempt {run.attempt})")
    session.refresh(run)
    attempts.log(session, run, f"attempt {run.attempt} set {target} by its MLflow client (it was {was})", now)
    feed.record(
        session,
        run.project_id,
        {"succeeded": "finished", "failed": "failed", "cancelled": "cancelled"}[target],
        f"external run {run.id} (#{run.index + 1}) set {target} by its MLflow client (it was {was})",
        actor_id=principal.user_id,
        experiment_id=run.experiment_id,
        run_id=run.id,
    )
    return run


def log_metrics(session: Session, run: Run, points: list[MetricIn], limit: int) -> None:
    """Through the metric route's own ingest: one point per run, key and step (a step logged again keeps
    its last value), MLflow's timestamp kept as the point's time, NaN and infinities stored as such."""
    if not points:
        return
    batch = MetricBatch(
        points=[
            MetricPoint(key=p.key, step=p.step, value=p.value, time=from_millis(p.timestamp)) for p in points
        ]
    )
    metrics.ingest(session, run, batch, limit)


def log_params(session: Session, run: Run, params: list[ParamIn]) -> None:
    """Into the run's logged params (``POST /runs/{id}/params``): a key logged again keeps its last value."""
    if params:
        run_params.log_params(session, run, ParamsIn(params={p.key: p.value for p in params}))


def set_tags(session: Session, principal: Principal, run: Run, tags: list[TagIn], field: str) -> None:
    """``mlflow.runName`` renames the run; MLflow's other own tags go to its provenance; any other tag is the
    label ``key=value`` (replacing the key's label)."""
    system: dict[str, str] = {}
    for i, tag in enumerate(tags):
        where = f"{field}[{i}]" if field == "tags" else field
        if tag.key == "mlflow.runName":
            runs.rename(session, principal, run, _name(tag.value))
        elif tag.key.startswith(MLFLOW_PREFIX):
            system[tag.key] = tag.value
        else:
            text = label(tag.key, tag.value, where)
            old = repository.run_labels_of_key(session, run.id, tag.key)
            repository.delete_run_labels(session, run.id, [t for t in old if t != text])
            if text not in old:
                session.add(RunTag(run_id=run.id, tag=text))
    if system:
        stored = dict(run.provenance or {})
        merged = {**stored.get("mlflow_tags", {}), **system}
        if len(merged) > MAX_MLFLOW_TAGS:
            raise invalid(field, f"a run keeps at most {MAX_MLFLOW_TAGS} of MLflow's own tags (mlflow.*)")
        run.provenance = {**stored, "mlflow_tags": merged}
    session.flush()


def delete_tag(session: Session, principal: Principal, run: Run, key: str) -> None:
    missing = NotFound(f"run {run.id} has no tag {key!r}")
    if key == "mlflow.runName":
        if run.name is None:
            raise missing
        runs.rename(session, principal, run, None)
    elif key.startswith(MLFLOW_PREFIX):
        stored = dict(run.provenance or {})
        kept = dict(stored.get("mlflow_tags", {}))
        if kept.pop(key, None) is None:
            raise missing
        run.provenance = {**stored, "mlflow_tags": kept}
    else:
        old = repository.run_labels_of_key(session, run.id, key)
        if not old:
            raise missing
        repository.delete_run_labels(session, run.id, old)
    session.flush()


def present_runs(session: Session, found: list[Run]) -> list[RunOut]:
    """Runs as MLflow's client reads them: params the spec's and the logged ones (the spec's value first, as
    the mirror keeps it), tags the labels, MLflow's own tags and ``mlflow.runName``, each key's latest
    metric point."""
    ids = [r.id for r in found]
    labels = runs_repo.run_tags_of(session, ids)
    latest = repository.latest_points(session, ids)
    out = []
    for run in found:
        system = dict((run.provenance or {}).get("mlflow_tags", {}))
        name = run.name or f"run-{run.id}"
        tags = {**dict(map(tag_of, labels[run.id])), **system, "mlflow.runName": name}
        params = {**param_values(run.logged_params or {}), **param_values(run.spec or {})}
        finished = run.finished_at if run.status not in ("running", "queued") else None
        info = RunInfoOut(
            run_id=str(run.id),
            run_uuid=str(run.id),
            run_name=name,
            experiment_id=str(run.experiment_id),
            user_id=system.get("mlflow.user", ""),
            status=_STATUS_NAMES.get(run.status, "RUNNING"),
            start_time=millis(run.started_at) if run.started_at else None,
            end_time=millis(finished) if finished else None,
            artifact_uri=artifact_uri(run),
        )
        data = RunDataOut(
            metrics=[
                MetricOut(key=k, value=_value(v), timestamp=millis(t), step=s)
                for k, s, v, t in latest[run.id]
            ],
            params=[TagOut(key=k, value=v) for k, v in sorted(params.items())],
            tags=[TagOut(key=k, value=v) for k, v in sorted(tags.items())],
        )
        out.append(RunOut(info=info, data=data))
    return out


def search_runs(session: Session, project_: Project, body: SearchRunsIn) -> tuple[list[Run], str | None]:
    view = (body.run_view_type or "ACTIVE_ONLY").upper()
    if view not in ("ACTIVE_ONLY", "ALL", "DELETED_ONLY"):
        raise invalid("run_view_type", f"{body.run_view_type!r}: ACTIVE_ONLY, DELETED_ONLY or ALL")
    ids = (
        experiment_ids(session, project_, body.experiment_ids, "experiment_ids")
        if body.experiment_ids
        else None
    )
    clauses = filters.parse_filter(body.filter)
    orders = filters.parse_order(body.order_by)
    offset, limit = _offset(body.page_token), min(body.max_results, PAGE)
    if view == "DELETED_ONLY":  # nothing is deleted here
        return [], None
    rows = repository.search_runs(session, project_.id, ids, clauses, orders, offset, limit + 1)
    return rows[:limit], cursor.encode({"offset": offset + limit}) if len(rows) > limit else None


def metric_history(
    session: Session, run: Run, key: str, max_results: int | None, page_token: str | None
) -> tuple[list[MetricOut], str | None]:
    """One series in step order, a page of at most ``HISTORY_PAGE`` points (MLflow's client asks for the
    next with ``page_token``); NaN and infinities as logged, a gap is NaN."""
    try:
        after = cursor.decode_int(page_token, "step")
    except Invalid:
        raise invalid("page_token", "not a page_token this server answered") from None
    limit = min(max_results or HISTORY_PAGE, HISTORY_PAGE)
    rows = repository.history(session, run.id, key, after, limit + 1)
    points = [MetricOut(key=key, value=_value(v), timestamp=millis(t), step=s) for s, v, t in rows[:limit]]
    token = cursor.encode({"step": rows[limit - 1][0]}) if len(rows) > limit else None
    return points, token


# -- artifacts ------------------------------------------------------------------------------------------------


def artifacts_of(session: Session, project_: Project, path: str) -> tuple[Run, str | None]:
    """The run and the path below its artifacts that a proxy path names (``<experiment>/<run>/artifacts/...``,
    what ``artifact_uri`` hands the client): the path is kept under the run's ``outputs/`` folder."""
    found = _ARTIFACT_PATH.match(path)
    if found is None:
        raise NotFound(
            f"no artifacts at {path[:200]!r}: a run's are under <experiment id>/<run id>/artifacts/"
        )
    run = run_of(session, project_, found.group(2), "path")
    if str(run.experiment_id) != found.group(1):
        raise NotFound(f"run {run.id} is not in experiment {found.group(1)}")
    below = (found.group(3) or "").strip("/")
    return run, below or None


def stored_path(below: str) -> str:
    """The platform's path of an MLflow artifact path (``outputs/<path>``), checked like any artifact's."""
    return artifacts.clean_path(f"{ARTIFACTS}/{below}")


def list_artifacts(store: ArtifactStore, run: Run, below: str | None) -> list[FileOut]:
    """The files and folders right under ``below`` (names relative to it); a file's own path lists itself."""
    base = f"{ARTIFACTS}/" if below is None else f"{stored_path(below)}/"
    children: dict[str, FileOut] = {}
    for f in store.files(run.id):
        if below is not None and f.path == base[:-1]:
            return [FileOut(path=below.rsplit("/", 1)[-1], is_dir=False, file_size=f.size)]
        if not f.path.startswith(base):
            continue
        head, sep, _ = f.path[len(base) :].partition("/")
        children[head] = (
            FileOut(path=head, is_dir=True) if sep else FileOut(path=head, is_dir=False, file_size=f.size)
        )
    return [children[k] for k in sorted(children)]


def writable(run: Run) -> None:
    """MLflow's client writes the artifacts of the external runs (a worker's run has its worker's)."""
    _external(run, "writes its artifacts")
