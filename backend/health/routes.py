from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field
from sqlalchemy import text

from backend.auth.dependencies import CurrentUser
from backend.http.deps import SessionDep, SettingsDep

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


class ServerConfig(BaseModel):
    """What the dashboard needs to know about this deployment."""

    version: str
    mlflow_ui_url: str | None = Field(
        description="MLflow's UI for browsers ('Open in MLflow' links to <url>/#/runs/<MLflow run id>); "
        "null where none is served: the dashboard hides the link"
    )


@router.get("/server", response_model=ServerConfig, operation_id="server-config", tags=["server"])
def server_config(_: CurrentUser, settings: SettingsDep) -> ServerConfig:
    return ServerConfig(version=VERSION, mlflow_ui_url=settings.mlflow_ui)
