"""The stores a spec names files in (docs/spec-confinement.md), for tests: the ``stores`` fixture
(tests/worker/conftest.py) points the worker's cache root at a folder of the test's own."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Stores:
    """A worker cache root of the test's own and the stores under it."""

    cache: Path
    data: Path  # the offline data store: specs name data files relative to it
    models: Path  # the model store: specs name model folders relative to it
