from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from common.nonfinite import Label


class MetricPoint(BaseModel):
    key: str = Field(min_length=1, max_length=250, pattern=r"^[^_\x00]", description="not starting with '_'")
    step: int = Field(ge=0, le=2**62)
    value: float | Label | None = Field(
        description='a number, or "NaN", "Infinity", "-Infinity" (JSON has no literal for them), stored as'
        " those values; null is stored as a gap"
    )
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
    min: float | None = Field(description="the smallest finite value (null: none); NaN and inf left out")
    max: float | None = Field(description="the largest finite value (null: none); NaN and inf left out")
    last: float | None = Field(description="the value at step_end; null when a gap or not finite")
    count: int
    time: datetime | None = Field(
        None, description="when the bucket's last point was logged (UTC); only with with_time=true"
    )
    nonfinite: int = Field(0, description="how many of the count points are NaN, Infinity or -Infinity")
    last_nonfinite: Label | None = Field(
        None, description="the value at step_end when it is NaN, Infinity or -Infinity (last is null then)"
    )


class Series(BaseModel):
    total_points: int
    step_min: int | None
    step_max: int | None
    buckets: list[Bucket]


class MetricsOut(BaseModel):
    run_id: int
    series: dict[str, Series]
