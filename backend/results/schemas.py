from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field


class ResultIn(BaseModel):
    kind: str = Field(min_length=1, max_length=100)
    payload: dict[str, Any]


class ResultPublic(BaseModel):
    id: int
    run_id: int
    kind: str
    payload: dict[str, Any]
    params: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
