from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import Path
from pydantic import BaseModel, Field

# what a spec's ``*_secret`` field may name (worker/specs/secrets.py holds the same pattern)
SECRET_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
SecretName = Annotated[str, Path(pattern=SECRET_NAME, max_length=64, description="the secret's name")]


class SecretSet(BaseModel):
    value: str = Field(min_length=1, max_length=16_384, description="the secret; never returned by the API")


class SecretPublic(BaseModel):
    """A secret as the API shows it: its name and when and by whom it was set, never its value."""

    name: str
    updated_at: datetime
    updated_by: str | None


class SecretValue(BaseModel):
    """A secret handed to the run whose spec names it (the run's own token only)."""

    name: str
    value: str
