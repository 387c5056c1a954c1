"""Worker test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.worker.stores import Stores


@pytest.fixture(scope="session")
def mlflow_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One sqlite MLflow store for the session: creating its schema takes seconds, so tests share it
    (each uses its own experiment or run)."""
    path: Path = tmp_path_factory.mktemp("mlflow") / "mlflow.db"
    return f"sqlite:///{path}"


@pytest.fixture
def stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Stores:
    """Point the worker's cache root (REASONLAB_CACHE) at a fresh folder: a test puts the files its spec
    names into ``stores.data`` / ``stores.models``. The machine's converted SmolLM2 and WordNet layout are
    linked in (read by the platform, never through a spec path), so nothing is converted again."""
    from worker.core.data.offline import cache_root

    real = cache_root()
    cache = tmp_path / "reasonlab-cache"
    data, models = cache / "data", cache / "models"
    data.mkdir(parents=True)
    models.mkdir()
    for shared in ("models/smollm2-135m", "nltk_data", "datasets"):
        if (real / shared).exists():
            (cache / shared).symlink_to(real / shared)
    monkeypatch.setenv("REASONLAB_CACHE", str(cache))
    return Stores(cache, data, models)


@pytest.fixture
def loopback_endpoints(monkeypatch: pytest.MonkeyPatch) -> None:
    """The admin's explicit opt-in that lets endpoint URLs reach a fake server on 127.0.0.1 (never the
    default: docs/spec-confinement.md): the address listed and private addresses allowed."""
    from worker.specs.confine import ALLOW_ENV, ALLOW_PRIVATE_ENV

    monkeypatch.setenv(ALLOW_ENV, "127.0.0.1")
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")
