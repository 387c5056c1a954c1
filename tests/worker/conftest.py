"""Worker test fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def mlflow_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One sqlite MLflow store for the session: creating its schema takes seconds, so tests share it
    (each uses its own experiment or run)."""
    path: Path = tmp_path_factory.mktemp("mlflow") / "mlflow.db"
    return f"sqlite:///{path}"


@pytest.fixture
def one_thread() -> Iterator[None]:
    """Small tensors on a shared 2-core machine: one intra-op thread is many times faster than two."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
