"""What every report block shares: its id and type, the run selection of the blocks that show runs, and
the cut-off a frozen block records. A block type is a module of this package (``blocks/__init__.py``
finds them): its pydantic class and, for a block that shows data, how the data is resolved and exported."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from backend.views.schemas import QUERY_MAX_BYTES, MetricName

# a block's id: chosen by the editor when it adds the block, kept when the block moves, what comments
# anchor to
BlockId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
Title = Annotated[str, Field(max_length=200)]
RunId = Annotated[int, Field(ge=1)]
MAX_RUNS = 50  # runs a figure or table shows at most


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BlockBase(Strict):
    id: BlockId
    type: str


class RunSource(Strict):
    """Which runs a figure or table shows: a query of the query language over the report's project
    (``query``, newest first, at most ``limit``) or pinned run ids (``run_ids``), one of the two."""

    query: str | None = Field(
        default=None, description=f"a query-language expression, at most {QUERY_MAX_BYTES} bytes"
    )
    run_ids: list[RunId] = Field(default_factory=list, max_length=MAX_RUNS)
    limit: int = Field(default=20, ge=1, le=MAX_RUNS)

    @field_validator("query")
    @classmethod
    def _query_size(cls, value: str | None) -> str | None:
        if value is not None and len(value.encode("utf-8")) > QUERY_MAX_BYTES:
            raise ValueError(f"at most {QUERY_MAX_BYTES} bytes")
        return value

    @field_validator("run_ids")
    @classmethod
    def _each_once(cls, value: list[int]) -> list[int]:
        if len(set(value)) != len(value):
            raise ValueError("a run is named twice")
        return value

    @model_validator(mode="after")
    def _one_of(self) -> RunSource:
        if (self.query is None or not self.query.strip()) == (not self.run_ids):
            raise ValueError("name the runs by a query or by run_ids, one of the two")
        return self


class RunCutoff(Strict):
    """One run as a frozen block saw it: its attempt and status, and each series' last step and row
    version (``metric_latest.rev``) at the cut-off."""

    run_id: RunId
    attempt: int = Field(ge=1)
    status: str = Field(max_length=16)
    steps: dict[MetricName, int] = Field(default_factory=dict, max_length=200)
    revs: dict[MetricName, int] = Field(default_factory=dict, max_length=200)


class Cutoff(Strict):
    """When a frozen block was frozen and what each of its runs had reached then (the server writes it
    when a block is saved frozen without one; the editor sends it back unchanged)."""

    at: datetime
    runs: list[RunCutoff] = Field(default_factory=list, max_length=MAX_RUNS)


Mode = Literal["live", "frozen"]


class DataBlock(BlockBase):
    """A block over runs: live (what the runs show now) or frozen (what they showed at ``cutoff``)."""

    title: Title = ""
    source: RunSource
    mode: Mode = "frozen"
    cutoff: Cutoff | None = None
