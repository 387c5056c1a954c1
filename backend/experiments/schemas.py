from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field

from backend.experiments.sweep import Sweep
from backend.runs.schemas import RunPublic


class ExperimentCreate(BaseModel):
    name: str = Field(min_length=1, max_length=300)
    kind: str = Field(min_length=1, max_length=100)
    spec: dict[str, Any] = Field(default_factory=dict)
    sweep: Sweep | None = None
    project: str | None = Field(None, max_length=200)
    description: str = Field("", max_length=100_000)
    tags: list[Annotated[str, Field(min_length=1, max_length=100)]] = Field(
        default_factory=list, max_length=50
    )


class PreviewRun(BaseModel):
    index: int
    params: dict[str, Any]
    spec: dict[str, Any]
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
    spec: dict[str, Any]
    sweep: dict[str, Any] | None
    author: str | None
    created_at: datetime
    run_count: int
    status_counts: dict[str, int]
    tags: list[str]
    review_state: str | None
    starred: bool


class ExperimentDetail(ExperimentPublic):
    runs: list[RunPublic]


class ExperimentPage(BaseModel):
    items: list[ExperimentPublic]
    next_cursor: str | None


class KindPublic(BaseModel):
    name: str
    description: str
    spec_schema: dict[str, Any]
    defaults: dict[str, Any]
    result_kinds: list[str]
