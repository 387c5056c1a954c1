from __future__ import annotations

from fastapi import APIRouter, Response
from pydantic import BaseModel, Field
from sqlalchemy import text

from backend.auth.dependencies import CurrentUser
from backend.http.deps import SessionDep, SettingsDep

router = APIRouter(tags=["health"])
VERSION = "0.1.0"
START_HEADER = "X-ReasonLab-Start"


class Health(BaseModel):
    status: str
    database: str
    version: str


@router.get("/health", response_model=Health, operation_id="health-get")
def health(session: SessionDep, settings: SettingsDep, response: Response) -> Health:
    session.execute(text("SELECT 1"))
    if settings.start_nonce:  # `reasonlab up` checks that the server on its port is the one it started
        response.headers[START_HEADER] = settings.start_nonce
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
