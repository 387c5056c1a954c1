from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class LoginIn(BaseModel):
    username: str = Field(min_length=1, max_length=150)
    password: str = Field(min_length=1, max_length=1000)


class TokenOut(BaseModel):
    access_token: str
    token_type: str = "bearer"
    expires_at: datetime


class ApiTokenCreate(BaseModel):
    name: str = Field("api", min_length=1, max_length=200)


class ApiTokenPublic(BaseModel):
    id: int
    name: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None


class ApiTokenCreated(ApiTokenPublic):
    token: str = Field(description="shown once; stored hashed")


class MembershipPublic(BaseModel):
    project_id: int
    project: str
    role: str


class UserPublic(BaseModel):
    id: int
    username: str
    is_admin: bool
    memberships: list[MembershipPublic]
