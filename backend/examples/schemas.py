"""Per-example tables of a run: rows posted by a kind, paged and diffed by readers."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from worker.specs.base import MAX_EXAMPLE_ROWS

# a table's name: what a kind calls it ("gradings", "flips"); short, safe in a URL and a file name
TABLE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


class ExampleRowIn(BaseModel):
    idx: int = Field(
        ge=0,
        lt=MAX_EXAMPLE_ROWS,
        description="the row's place in its table (the writer numbers rows 0, 1, ...); a table holds at "
        f"most {MAX_EXAMPLE_ROWS:,} rows",
    )
    key: str = Field(
        min_length=1,
        max_length=200,
        description="the example's stable id: unique in the table, diffs match on it",
    )
    data: dict[str, Any] = Field(description="the example's fields (JSON, at most 64 KiB)")


class ExamplesIn(BaseModel):
    table: str = Field(pattern=TABLE_PATTERN, description="the table's name")
    rows: list[ExampleRowIn] = Field(description="at most 1,000 rows; a row re-sent with its idx replaces it")
    attempt: int | None = Field(
        None, ge=1, le=1_000_000, description="the writing attempt; 409 unless it still owns the run"
    )


class ExamplesAccepted(BaseModel):
    table: str
    accepted: int = Field(description="rows written by this batch (new or replaced)")
    rows: int = Field(description="rows the table holds now")


class ExampleTable(BaseModel):
    name: str
    rows: int


class ExamplePeer(BaseModel):
    """Another run of the same experiment that holds the table (what a diff compares with)."""

    id: int
    index: int = Field(description="the run's number in its experiment (from 0)")
    name: str | None = Field(description="what a member named the run (null: it goes by its number)")
    status: str
    rows: int = Field(description="rows its table holds")


class ExampleRow(BaseModel):
    idx: int
    key: str
    data: dict[str, Any]


class ExamplePage(BaseModel):
    run_id: int
    table: str
    total: int = Field(description="rows in the table (kept by the writes, not counted per page)")
    items: list[ExampleRow]
    next_cursor: str | None = None


class ExampleDiff(BaseModel):
    key: str
    change: Literal["changed", "only_run", "only_other"]
    run: ExampleRow | None = Field(description="the row of the run asked for (None: not in it)")
    other: ExampleRow | None = Field(description="the row of the other run (None: not in it)")
    differing: list[str] = Field(
        default_factory=list,
        description="of a changed item, every data field whose values differ under the tolerance (one of the "
        "compared fields or not), in the run's field order; empty for an item one run lacks",
    )


class ExampleDiffPage(BaseModel):
    run_id: int
    other_id: int
    table: str
    fields: list[str] = Field(description="the data fields that define a change (empty: every field)")
    tolerance: float = Field(description="the relative tolerance numbers were compared with")
    abs_tolerance: float = Field(description="the absolute tolerance numbers were compared with")
    items: list[ExampleDiff] = Field(description="keys whose rows differ, or that only one run has")
    scanned: int = Field(description="rows compared to answer this page")
    next_cursor: str | None = Field(
        None, description="where to go on; a page may hold fewer items than asked and still have one"
    )
