from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from backend.kinds.typing import ResultPayload


class ResultIn(BaseModel):
    kind: str = Field(min_length=1, max_length=100, description="the record's result kind")
    payload: ResultPayload = Field(description="the record (its kind may be left out)")
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
    payload: ResultPayload
    params: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
