from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field

from backend.experiments.sweep import Sweep
from backend.kinds.typing import SpecPayload
from backend.runs.schemas import RunPublic


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
    runs: list[RunPublic]


class ExperimentPage(BaseModel):
    items: list[ExperimentPublic]
    next_cursor: str | None
