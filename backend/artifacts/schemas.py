"""A run's artifacts as the API shows them: one record per stored file, and a run's listing."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

# What a file is, by the top-level folder it lives in (backend/artifacts/service.py, FOLDERS):
#   checkpoints/ -> checkpoint (resume state, the newest few), outputs/ -> output (what the kind wrote to
#   its out_dir), model/ -> model (the final model: the newest checkpoint of a succeeded run)
ArtifactKind = Literal["checkpoint", "output", "model"]


class ArtifactPublic(BaseModel):
    path: str = Field(description="relative to the run's artifacts, '/'-separated: outputs/model/config.json")
    size: int = Field(description="bytes")
    modified: datetime | None = Field(description="last write, where the store records it")
    kind: ArtifactKind


class ArtifactList(BaseModel):
    run_id: int
    items: list[ArtifactPublic] = Field(description="every stored file of the run, sorted by path")
    count: int
    total_size: int = Field(description="bytes, all items together")
