"""What the exports take: the file format, and a table posted to be written as Parquet."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, Field, field_validator

# a chart's table: bounded in cells besides the request body's 16 MiB (backend/http/limits.py, "table export")
MAX_COLUMNS = 1_000
MAX_CELLS = 1_000_000

Cell = str | float | int | bool | None


class ExportFormat(StrEnum):
    csv = "csv"
    parquet = "parquet"


MEDIA_TYPES = {
    ExportFormat.csv: "text/csv; charset=utf-8",
    ExportFormat.parquet: "application/vnd.apache.parquet",
}


class TableColumn(BaseModel):
    name: Annotated[str, Field(min_length=1, max_length=500)]
    values: list[Cell]


class TableIn(BaseModel):
    """A table as columns of equal length (what a chart draws, ``lib/chartTable.ts`` in the dashboard),
    to be written as Parquet."""

    columns: Annotated[list[TableColumn], Field(min_length=1, max_length=MAX_COLUMNS)]

    @field_validator("columns")
    @classmethod
    def _rectangular(cls, columns: list[TableColumn]) -> list[TableColumn]:
        rows = len(columns[0].values)
        seen: set[str] = set()
        for column in columns:
            if len(column.values) != rows:
                raise ValueError(
                    f"every column needs {rows} values (the first's), {column.name!r} has "
                    f"{len(column.values)}"
                )
            if column.name in seen:
                raise ValueError(f"the name {column.name!r} is repeated")
            seen.add(column.name)
        if rows * len(columns) > MAX_CELLS:
            raise ValueError(f"at most {MAX_CELLS:,} cells, got {rows * len(columns):,}")
        return columns
