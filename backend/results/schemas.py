from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field


class ResultIn(BaseModel):
    kind: str = Field(min_length=1, max_length=100)
    payload: dict[str, Any]
    key: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="idempotency key: a record re-sent with it replaces its copy",
    )
    attempt: int | None = Field(
        None, ge=1, le=1_000_000, description="the writing attempt; 409 unless it still owns the run"
    )


class ResultPublic(BaseModel):
    id: int
    run_id: int
    kind: str
    payload: dict[str, Any]
    params: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
