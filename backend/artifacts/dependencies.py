"""The artifact store as a route dependency (``StoreDep``): the store of ``REASONLAB_ARTIFACT_URL``, for the
routes that move files (a run's artifacts, a project's datasets)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from backend.http.deps import SettingsDep
from backend.store import ArtifactStore, store_for


def get_store(settings: SettingsDep) -> ArtifactStore:
    return store_for(settings.artifact_url)


StoreDep = Annotated[ArtifactStore, Depends(get_store)]
