"""The SDK's package in the project's venv: its public names, a light import, and worker.client as a
re-export of it only (deprecated, kept for notebooks that import the client from there)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import reasonlab_sdk
import reasonlab_sdk.client

REPO = Path(__file__).resolve().parents[2]


def test_the_package_exports_the_client_and_its_errors() -> None:
    for name in reasonlab_sdk.__all__:
        assert hasattr(reasonlab_sdk, name), name
    assert reasonlab_sdk.ReasonLabClient is reasonlab_sdk.client.ReasonLabClient
    for error in (
        "Unauthorized",
        "Forbidden",
        "NotFound",
        "Conflict",
        "TooLarge",
        "Invalid",
        "ApiUnavailable",
    ):
        assert issubclass(getattr(reasonlab_sdk, error), reasonlab_sdk.ApiError), error


def test_importing_the_sdk_loads_neither_torch_mlflow_nor_the_worker() -> None:
    code = (
        "import sys, reasonlab_sdk; "
        "print(sorted(m for m in ('torch', 'mlflow', 'worker', 'backend', 'pydantic') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


def test_worker_client_only_re_exports_the_sdk() -> None:
    import worker.client

    assert "deprecated" in (worker.client.__doc__ or "").lower()
    assert worker.client.__all__, "worker.client names what it re-exports"
    for name in worker.client.__all__:
        assert getattr(worker.client, name) is getattr(reasonlab_sdk, name), name
    own = {name for name in vars(worker.client) if not name.startswith("_")} - set(worker.client.__all__)
    assert own <= {"annotations"}, f"worker.client defines {own} itself: put it in the SDK"
