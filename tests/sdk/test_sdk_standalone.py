"""The SDK installs alone: ``pip install ./sdk`` into a fresh, plain venv (no system site-packages, not the
project's venv) brings httpx and its own dependencies only, and the client works there without torch or
mlflow, which are neither installed nor imported.

pip resolves the SDK's build backend and httpx as it does for any user: from the machine's ordinary pip
configuration (on the development machines a local wheel folder and index; elsewhere PyPI).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SDK = REPO / "sdk"

# what the SDK's venv may hold besides pip itself: the SDK, httpx and httpx's own dependencies
ALLOWED_DISTRIBUTIONS = {
    "reasonlab-sdk",
    "httpx",
    "httpcore",
    "h11",
    "anyio",
    "sniffio",
    "idna",
    "certifi",
    "typing-extensions",
    "exceptiongroup",
    "pip",
    "setuptools",
}

PROBE = """
import importlib.metadata, importlib.util, json, sys

import httpx
from reasonlab_sdk import ReasonLabClient, api_types

def answer(request):
    return httpx.Response(200, json={"status": "ok", "path": request.url.path})

with ReasonLabClient("http://api.test", "tok", transport=httpx.MockTransport(answer)) as client:
    health = client.health()

from reasonlab_sdk.sysmetrics import SystemSampler  # a tracked run's system metrics, without psutil

system = sorted(SystemSampler(0.0).sample())

print(json.dumps({
    "health": health,
    "has_types": hasattr(api_types, "RunPublic"),
    "system": system,
    "loaded": sorted(m for m in ("torch", "mlflow", "pydantic", "worker", "backend", "psutil") if m in sys.modules),
    "importable": sorted(
        m for m in ("torch", "mlflow", "worker", "backend", "psutil") if importlib.util.find_spec(m) is not None
    ),
    "distributions": sorted(
        {d.metadata["Name"].lower().replace("_", "-") for d in importlib.metadata.distributions()}
    ),
}))
"""


@pytest.mark.slow
def test_pip_install_sdk_alone_gives_a_working_client_without_torch_or_mlflow(tmp_path: Path) -> None:
    # install from a copy: a build in sdk/ itself would leave build/ and egg-info in the checkout
    source = tmp_path / "sdk"
    shutil.copytree(SDK, source, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"

    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stdout + install.stderr

    # a working directory away from the repository, so that nothing of the checkout is importable
    probe = subprocess.run(
        [str(python), "-I", "-c", PROBE], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert probe.returncode == 0, probe.stdout + probe.stderr
    seen = json.loads(probe.stdout)
    assert seen["health"] == {"status": "ok", "path": "/api/v1/health"}
    assert seen["has_types"] is True
    # the machine and the process from /proc (this is Linux), with psutil neither installed nor imported
    assert {"system/cpu_percent", "system/memory_percent", "system/process_cpu_percent"} <= set(
        seen["system"]
    )
    assert seen["loaded"] == [], f"importing the SDK loaded {seen['loaded']}"
    assert seen["importable"] == [], f"the SDK's venv can import {seen['importable']}"
    assert "reasonlab-sdk" in seen["distributions"] and "httpx" in seen["distributions"]
    extra = set(seen["distributions"]) - ALLOWED_DISTRIBUTIONS
    assert not extra, f"pip install ./sdk brought {sorted(extra)} besides httpx's dependencies"
