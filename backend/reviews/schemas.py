from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

TagName = str


class CommentIn(BaseModel):
    body: str = Field(min_length=1, max_length=100_000, description="markdown")


class CommentPublic(BaseModel):
    id: int
    experiment_id: int | None
    run_id: int | None
    author: str | None
    body: str
    created_at: datetime


class ReviewIn(BaseModel):
    state: Literal["approved", "changes_requested"]
    body: str = Field("", max_length=100_000)


class ReviewPublic(BaseModel):
    id: int
    experiment_id: int
    reviewer: str | None
    state: str
    body: str
    created_at: datetime


class ActivityPublic(BaseModel):
    id: int
    type: str
    actor: str | None
    experiment_id: int | None
    run_id: int | None
    run_name: str | None = Field(description="the run's name now (PATCH /runs/{id}); null: unnamed or no run")
    claim_id: int | None = Field(default=None, description="the claim the row is about (backend/claims/)")
    message: str
    created_at: datetime
