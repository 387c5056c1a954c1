from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field


class ProjectCreate(BaseModel):
    name: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = Field("", max_length=10_000)


class ProjectPublic(BaseModel):
    id: int
    name: str
    description: str
    created_at: datetime
    role: str


class MemberSet(BaseModel):
    username: str = Field(min_length=1, max_length=150)
    role: Literal["viewer", "member", "admin"]


class MemberPublic(BaseModel):
    user_id: int
    username: str
    role: str
