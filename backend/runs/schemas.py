from __future__ import annotations

import unicodedata
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, RootModel, field_validator

from backend.groups.schemas import RunGroup
from backend.kinds.typing import SpecPayload
from backend.models import Run, RunAttempt
from backend.runs import attempts, eta
from common.nonfinite import Label, Shown
from common.runs import FinalStatus, RunStatus


class Progress(BaseModel):
    done: int = Field(0, ge=0, le=2**62)
    total: int = Field(0, ge=0, le=2**62)
    message: str = Field("", max_length=2000)


class RunProgress(Progress):
    """A run's last progress report, and when it should be done at that rate."""

    eta_at: datetime | None = Field(
        None,
        description="while the run runs: when it should be done at the progress rate of its current "
        "attempt (null until done has moved since the attempt's first report, or without a total)",
    )


class RunPublic(BaseModel):
    id: int
    experiment_id: int
    project_id: int
    kind: str
    index: int
    name: str | None = Field(description="what a member named the run (PATCH /runs/{id}); null: unnamed")
    spec: SpecPayload
    params: dict[str, Any]
    status: RunStatus
    attempt: int = Field(
        description="the current attempt's number: every claim takes the next one, released attempts "
        "included (the run token, the task and every write of its worker name it; the attempt history's "
        "rows); the attempts counted against max_attempts are attempt - released"
    )
    max_attempts: int = Field(
        description="the attempts allowed, released ones not counted: the reaper requeues a lost worker's "
        "run while attempt - released is below it, and fails it at the last"
    )
    released: int = Field(
        description="attempts handed back at a worker's shutdown (POST /runs/{id}/release), each resumed "
        "from its checkpoint by the next attempt; not counted against max_attempts (the dashboard's "
        "'attempt 1/3, resumed 3x'; the query language's `released`)"
    )
    queue: str
    worker: str | None
    heartbeat_at: datetime | None
    held: bool = Field(
        description="a worker holds the run now: it is running and its heartbeat is fresher than the "
        "reaper's timeout (false while a lost worker's run waits to be requeued)"
    )
    run_seconds: float | None = Field(
        description="seconds workers spent on the run, over all its attempts (the running one up to its "
        "last heartbeat, `heartbeat_at`): the downtime between attempts is not counted; null until it starts"
    )
    progress: RunProgress
    error: str | None
    cancel_requested: bool
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    mlflow_run_id: str | None
    logged_params: dict[str, Any] = Field(
        description="the parameters the run logged itself (ctx.log_params: derived values such as parameter "
        "counts; its spec is `spec`), flattened (`derived.parameters`), the last value of a key kept"
    )
    summary: dict[str, float | Label | None] = Field(
        description="each metric's value at its latest step: a number, or the label of a non-finite one "
        '("NaN", "Infinity", "-Infinity")'
    )
    tags: list[str]
    group_key: str | None = Field(
        None,
        description="the run's seed group (the sha256 of its spec without `seed` keys; an external run opened "
        "with a `group`: of that name): the runs page's default grouping, and the Compare page's",
    )

    @classmethod
    def of(
        cls, run: Run, tags: list[str] | None, summary: dict[str, Shown], timing: attempts.Timing
    ) -> RunPublic:
        """``summary``: the run's latest metric values (``backend.runs.repository.metric_summaries``);
        ``timing``: whether a worker holds it and its run time (``backend.runs.attempts.timings``)."""
        return cls(
            id=run.id,
            experiment_id=run.experiment_id,
            project_id=run.project_id,
            kind=run.kind,
            index=run.index,
            name=run.name,
            spec=run.spec,
            params=run.params,
            status=RunStatus(run.status),
            attempt=run.attempt,
            max_attempts=run.max_attempts,
            released=run.released,
            queue=run.queue,
            worker=run.worker,
            heartbeat_at=run.heartbeat_at,
            held=timing.held,
            run_seconds=timing.run_seconds,
            progress=RunProgress(
                done=run.progress_done,
                total=run.progress_total,
                message=run.progress_message,
                eta_at=eta.eta_at(run),
            ),
            error=run.error,
            cancel_requested=run.cancel_requested,
            created_at=run.created_at,
            started_at=run.started_at,
            finished_at=run.finished_at,
            mlflow_run_id=run.mlflow_run_id,
            logged_params=run.logged_params or {},
            summary=summary,
            tags=tags or [],
            group_key=run.group_key,
        )


class ClaimOut(RunPublic):
    """The claimed run and the token its attempt works with from then on (its own routes only)."""

    run_token: str = Field(description="a token for this run and attempt only; dies with the attempt")


class RunPage(BaseModel):
    items: list[RunPublic]
    next_cursor: str | None
    groups: list[RunGroup] | None = Field(
        None, description="with group_by: the page of groups (items is then empty); null without group_by"
    )


class ClaimIn(BaseModel):
    attempt: int | None = Field(
        None, ge=1, le=1_000_000, description="the attempt the message names; null: the run's current one"
    )
    worker: str = Field(min_length=1, max_length=300)


class HeartbeatIn(BaseModel):
    attempt: int = Field(ge=1, le=1_000_000)
    progress: Progress | None = None


class HeartbeatOut(BaseModel):
    cancel_requested: bool


class FinishIn(BaseModel):
    attempt: int = Field(ge=1, le=1_000_000)
    status: FinalStatus
    progress: Progress | None = Field(None, description="the run's last progress")
    error: str | None = Field(None, max_length=1_000_000)
    mlflow_run_id: str | None = Field(None, max_length=64)


class ReleaseIn(BaseModel):
    attempt: int = Field(ge=1, le=1_000_000)


MAX_RUN_NAME = 200  # runs.name is String(200) (migration 0012)


class RunPatch(BaseModel):
    """What a member may change of a run: its name. ``mlflow_run_id`` (sent by older workers with the run's
    token) is accepted and ignored: the API's MLflow mirror owns it."""

    name: str | None = Field(
        None,
        max_length=MAX_RUN_NAME,
        description=f"the run's name, trimmed; empty or null clears it; at most {MAX_RUN_NAME} characters",
    )
    mlflow_run_id: str | None = Field(None, max_length=64)

    @field_validator("name", mode="before")
    @classmethod
    def _trim(cls, value: object) -> object:
        # trimmed before the length check; whitespace only is no name
        if isinstance(value, str):
            return value.strip() or None
        return value

    @field_validator("name")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        # a name is shown in one line everywhere (tables, legends, the CLI's columns)
        if value is not None and any(unicodedata.category(c) == "Cc" for c in value):
            raise ValueError("a run name is one line of text: no control characters (newlines, tabs)")
        return value


class ResumedIn(BaseModel):
    attempt: int = Field(
        ge=1, le=1_000_000, description="the attempt that resumed; 409 unless it owns the run"
    )
    step: int = Field(ge=0, le=2**62, description="the step of the checkpoint it resumed from")


AttemptOutcome = Literal["running", FinalStatus, "released", "lost"]  # attempts.OUTCOMES


class AttemptPublic(BaseModel):
    """One attempt of a run: the worker that held it, when, for how long, and how it ended."""

    attempt: int
    worker: str | None
    started_at: datetime = Field(description="when the worker claimed it")
    ended_at: datetime | None = Field(
        description="when it ended (a lost attempt: its last heartbeat); null while it runs"
    )
    duration_seconds: float = Field(
        description="from its claim to its end (running: to the run's last heartbeat); downtime excluded"
    )
    outcome: AttemptOutcome = Field(
        description="running; succeeded, failed or cancelled (its worker finished it); released (handed "
        "back at the worker's shutdown, not counted against max_attempts); lost (its heartbeat went stale: "
        "the reaper requeued the run as the next attempt, or failed it at the last)"
    )
    resumed_step: int | None = Field(
        description="the checkpoint step it resumed from; null: it started afresh"
    )

    @classmethod
    def of(cls, row: RunAttempt, run: Run) -> AttemptPublic:
        return cls(
            attempt=row.attempt,
            worker=row.worker,
            started_at=row.started_at,
            ended_at=row.ended_at,
            duration_seconds=attempts.duration(row, run),
            outcome=row.outcome,  # type: ignore[arg-type]  # one of attempts.OUTCOMES
            resumed_step=row.resumed_step,
        )


class LogsIn(BaseModel):
    lines: list[str] = Field(max_length=10_000)
    attempt: int | None = Field(
        None, ge=1, le=1_000_000, description="the writing attempt; 409 unless it still owns the run"
    )


# POST /runs/{id}/params: at most this many keys a post and a run, after flattening; each key at most
# MAX_PARAM_KEY characters, each value at most MAX_PARAM_VALUE (a string's length, else its JSON text's)
MAX_LOGGED_PARAMS = 1000
MAX_PARAM_KEY = 250
MAX_PARAM_VALUE = 10_000


class ParamsIn(BaseModel):
    params: dict[str, Any] = Field(
        description='parameters the run logged: nested objects are flattened (`{"a": {"b": 1}}` is '
        f"`a.b`); at most {MAX_LOGGED_PARAMS} keys (a post and a run), keys of at most {MAX_PARAM_KEY} "
        f"characters, values (text, numbers, booleans, null, lists) of at most {MAX_PARAM_VALUE:,} "
        "characters (a list or number as JSON text); merged into the run's, the last value of a key kept"
    )
    attempt: int | None = Field(
        None, ge=1, le=1_000_000, description="the writing attempt; 409 unless it still owns the run"
    )


class LogLine(BaseModel):
    seq: int
    time: datetime
    line: str


class LogsPage(BaseModel):
    items: list[LogLine]
    last_seq: int


class MetricsEventData(BaseModel):
    steps: dict[str, int] = Field(description="metric key -> its latest step, for keys that moved")


class EndEventData(BaseModel):
    status: RunStatus | Literal["deleted"]


class StatusEvent(BaseModel):
    """The run changed status, attempt, worker, cancel flag, error or `held`: the whole run."""

    event: Literal["status"]
    data: RunPublic


class ProgressEvent(BaseModel):
    event: Literal["progress"]
    data: RunProgress


class MetricsEvent(BaseModel):
    """New metric points exist (fetch them with GET /runs/{id}/metrics)."""

    event: Literal["metrics"]
    data: MetricsEventData


class EndEvent(BaseModel):
    """The run finished (or was deleted); the stream closes."""

    event: Literal["end"]
    data: EndEventData


class RunEvent(
    RootModel[Annotated[StatusEvent | ProgressEvent | MetricsEvent | EndEvent, Field(discriminator="event")]]
):
    """One server-sent event of GET /runs/{id}/events: ``event: <event>`` and ``data: <data as JSON>``."""
