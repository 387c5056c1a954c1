"""What the routes that move files share (a run's artifacts, a project's datasets): the artifact store as a
dependency, the OpenAPI shape of a binary body, and ending the request's transaction before a transfer."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends
from sqlalchemy.orm import Session

from backend.artifacts.repository import ArtifactStore, store_for
from backend.http.deps import SettingsDep


def get_store(settings: SettingsDep) -> ArtifactStore:
    return store_for(settings.artifact_url)


StoreDep = Annotated[ArtifactStore, Depends(get_store)]

BINARY = {"schema": {"type": "string", "format": "binary"}}

UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {"required": True, "content": {"application/octet-stream": BINARY}}
}


def release_session(session: Session) -> None:
    """End the request's transaction before a long transfer: no database connection held meanwhile."""
    session.commit()
    session.close()
