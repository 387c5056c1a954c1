"""The data a report block shows, as resolved from its runs (live) or as kept when it was frozen (a
draft's, backend/reports/kept.py) and by the revision that published it (frozen): the shape the dashboard
draws, the share link serves and the exports read."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field


class RunInfo(BaseModel):
    """A run a block shows, and how far: each series' first and last step shown."""

    run_id: int
    name: str | None
    experiment_id: int
    status: str
    attempt: int
    steps: dict[str, list[int]] = Field(default_factory=dict, description="key -> [first step, last step]")


class SeriesData(BaseModel):
    run_id: int
    key: str
    label: str
    group: str | None = None
    points: list[tuple[int, float | None]] = Field(description="[step, value] pairs, value null: a gap")


class ResultData(BaseModel):
    run_id: int
    kind: str
    payload: dict[str, Any]


class BlockData(BaseModel):
    """``live``: resolved at ``as_of`` from the runs as they are; otherwise what the block's cut-off
    (frozen at ``as_of``) or its revision kept. ``hidden_runs``: runs the block names that are not the
    report's project's (or no longer exist): never shown; ``visible`` false when that is every run.
    ``exact`` false: a frozen block read again up to its cut-off instead of the data kept when it was
    frozen (``exact_note`` says why, and whether a run changed since)."""

    block_id: str
    type: str
    live: bool
    as_of: datetime
    visible: bool = True
    hidden_runs: int = 0
    runs: list[RunInfo] = Field(default_factory=list)
    series: list[SeriesData] = Field(default_factory=list)
    columns: list[str] = Field(default_factory=list)
    rows: list[list[Any]] = Field(default_factory=list, description="table cells, a row per run or example")
    results: list[ResultData] = Field(default_factory=list)
    detail: dict[str, Any] | None = Field(
        default=None,
        description="what a block type shows that is not runs (a claim block: the claim and its evaluation)",
    )
    exact: bool = Field(
        default=True,
        description="false: a frozen block read again from the runs up to its cut-off, not the data kept "
        "when it was frozen, so a retry since then may show here (a live block is always true)",
    )
    exact_note: str | None = Field(
        default=None, description="when exact is false: why, in one line (the caption shows it)"
    )
