from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class MetricPoint(BaseModel):
    key: str = Field(min_length=1, max_length=250, pattern=r"^[^_\x00]", description="not starting with '_'")
    step: int = Field(ge=0, le=2**62)
    value: float | None = Field(description="null, NaN and inf are stored as a gap")
    time: datetime | None = None


class MetricBatch(BaseModel):
    points: list[MetricPoint]
    attempt: int | None = Field(
        None, ge=1, le=1_000_000, description="the writing attempt; 409 unless it still owns the run"
    )


class Accepted(BaseModel):
    accepted: int


class Bucket(BaseModel):
    step_start: int
    step_end: int
    min: float | None
    max: float | None
    last: float | None
    count: int
    time: datetime | None = Field(
        None, description="when the bucket's last point was logged (UTC); only with with_time=true"
    )


class Series(BaseModel):
    total_points: int
    step_min: int | None
    step_max: int | None
    buckets: list[Bucket]


class MetricsOut(BaseModel):
    run_id: int
    series: dict[str, Series]
