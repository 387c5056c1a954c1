from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field

from backend.experiments.sweep import Sweep
from backend.kinds.typing import SpecPayload
from backend.runs.schemas import RunPublic
from common.nonfinite import Label
from common.runs import RunStatus


class ExperimentCreate(BaseModel):
    name: str = Field(min_length=1, max_length=300)
    kind: str = Field(min_length=1, max_length=100, description="the kind's name (GET /kinds)")
    spec: SpecPayload = Field(
        default_factory=dict, description="the kind's spec; fields left out take their defaults"
    )
    sweep: Sweep | None = None
    project: str | None = Field(None, max_length=200)
    description: str = Field("", max_length=100_000)
    tags: list[Annotated[str, Field(min_length=1, max_length=100)]] = Field(
        default_factory=list, max_length=50
    )


class PreviewRun(BaseModel):
    index: int
    params: dict[str, Any]
    spec: SpecPayload
    queue: str = Field(description="cpu or gpu, from the spec's resources")


class Preview(BaseModel):
    count: int
    runs: list[PreviewRun]


class ExperimentPublic(BaseModel):
    id: int
    project_id: int
    project: str
    name: str
    description: str
    kind: str
    spec: SpecPayload
    sweep: dict[str, Any] | None
    author: str | None
    created_at: datetime
    run_count: int
    status_counts: dict[str, int]
    tags: list[str]
    review_state: str | None
    starred: bool


class ExperimentDetail(ExperimentPublic):
    runs: list[RunPublic] = Field(description="every run, in index order; empty with with_runs=false")


class RunsTable(BaseModel):
    """An experiment's runs as columns, for a table of thousands of runs: one array per field, the i-th
    entry of each is the i-th run (index order); no specs (GET /runs/{id} has a run's spec). 10,000 runs
    are ~1 MB of JSON here against ~7 MB as ``ExperimentDetail.runs``."""

    experiment_id: int
    id: list[int]
    index: list[int]
    name: list[str | None] = Field(description="each run's name (null: unnamed, PATCH /runs/{id} names it)")
    status: list[RunStatus]
    attempt: list[int] = Field(
        description="each run's current attempt number, as RunPublic's (released attempts included)"
    )
    released: list[int] = Field(
        description="each run's attempts handed back at a worker's shutdown and resumed by the next "
        "attempt; attempt - released are the attempts counted against its max_attempts (the dashboard's "
        "'att.' column)"
    )
    created_at: list[datetime]
    started_at: list[datetime | None]
    finished_at: list[datetime | None]
    ended_seconds: list[float | None] = Field(
        description="each run's seconds of work over its ended attempts (claim to end; a lost attempt ends"
        " at its last heartbeat), so without the downtime between attempts; null: the run has no attempt"
        " records (it never started, or started before attempts were recorded: then started_at to"
        " finished_at is its run time)"
    )
    attempt_started_at: list[datetime | None] = Field(
        description="the start of each run's running attempt (null: none runs); a running run's run time is"
        " ended_seconds + (now - attempt_started_at), as the run page's run_seconds"
    )
    params: dict[str, list[Any]] = Field(
        description="each swept parameter's value per run (null where a run has no such parameter)"
    )
    summary: dict[str, list[float | Label | None]] = Field(
        description='each metric\'s latest value per run: a number, the label of a non-finite one ("NaN", '
        '"Infinity", "-Infinity"), null where the run has no such metric'
    )


class ExperimentPage(BaseModel):
    items: list[ExperimentPublic]
    next_cursor: str | None
