from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel
from sqlalchemy import text

from backend.deps import SessionDep

router = APIRouter(tags=["health"])
VERSION = "0.1.0"


class Health(BaseModel):
    status: str
    database: str
    version: str


@router.get("/health", response_model=Health, operation_id="health-get")
def health(session: SessionDep) -> Health:
    session.execute(text("SELECT 1"))
    return Health(status="ok", database="ok", version=VERSION)
