from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import Path
from pydantic import BaseModel

from worker.specs.confine import DATASET_NAME_PATTERN

DatasetName = Annotated[
    str,
    Path(
        pattern=DATASET_NAME_PATTERN,
        max_length=128,
        description="a file name (letters, digits, . _ -), named by a spec as dataset:<name>",
    ),
]


class DatasetPublic(BaseModel):
    """A data file uploaded to a project; a spec names it as ``dataset:<name>`` in a data-path field."""

    name: str
    size: int
    sha256: str
    uploaded_at: datetime
    uploaded_by: str | None
