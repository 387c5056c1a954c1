"""docker/entrypoint.sh migrates before the API starts and gives each gpu worker replica its own GPU
(run for real with a fake ``reasonlab`` and ``nvidia-smi``)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.deploy.conftest import ENTRYPOINT


def _toolbox(tmp_path: Path, *, gpus: list[str] | None) -> Path:
    """A PATH with only what the entrypoint uses, a fake `reasonlab` that logs its argv and, when
    ``gpus`` is given, a fake `nvidia-smi` that lists them."""
    box = tmp_path / "bin"
    box.mkdir()
    for tool in ("sh", "flock", "mkdir", "tr", "wc", "sleep", "cat", "env"):
        found = shutil.which(tool)
        if found is None:
            pytest.fail(f"`{tool}` is needed to run docker/entrypoint.sh", pytrace=False)
        (box / tool).symlink_to(found)
    log = tmp_path / "reasonlab.log"
    (box / "reasonlab").write_text(f'#!/bin/sh\necho "$*" >> {shlex.quote(str(log))}\n')
    if gpus is not None:
        listing = "".join(f"{g}\\r\\n" for g in gpus)  # nvidia-smi may end lines with CRLF
        (box / "nvidia-smi").write_text(f"#!/bin/sh\nprintf '{listing}'\n")
    for f in box.iterdir():
        if not f.is_symlink():
            f.chmod(0o755)
    return box


def _entrypoint(box: Path, *argv: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(box / "sh"), str(ENTRYPOINT), *argv],
        env={"PATH": str(box), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_entrypoint_migrates_before_the_api_only(tmp_path: Path) -> None:
    assert os.access(ENTRYPOINT, os.X_OK), "docker/entrypoint.sh must be executable"
    box = _toolbox(tmp_path, gpus=None)
    log = tmp_path / "reasonlab.log"
    api = ["reasonlab", "api", "--no-migrate", "--host", "0.0.0.0", "--port", "8000"]
    p = _entrypoint(box, *api)
    assert p.wait(30) == 0, p.stderr.read() if p.stderr else ""
    assert log.read_text().splitlines() == ["migrate", " ".join(api[1:])]
    log.unlink()
    p = _entrypoint(box, "reasonlab", "worker", "--queue", "cpu")
    assert p.wait(30) == 0
    assert log.read_text().splitlines() == ["worker --queue cpu"]


def test_entrypoint_gives_each_gpu_worker_its_own_gpu(tmp_path: Path) -> None:
    gpus = ["GPU-11111111-aaaa", "GPU-22222222-bbbb"]
    box = _toolbox(tmp_path, gpus=gpus)
    env = {"REASONLAB_GPU_LOCK_DIR": str(tmp_path / "locks"), "REASONLAB_GPU_RETRY_SECONDS": "0"}
    hold = ["sh", "-c", 'echo "$CUDA_VISIBLE_DEVICES" > "$0"; exec sleep 60']
    holders = []
    try:
        for i in range(2):
            out = tmp_path / f"owner{i}"
            holders.append(_entrypoint(box, *hold, str(out), **env))
            deadline = time.time() + 30
            while not (out.is_file() and out.read_text().strip()) and time.time() < deadline:
                assert holders[-1].poll() is None, holders[-1].stderr.read() if holders[-1].stderr else ""
                time.sleep(0.05)
        owned = [(tmp_path / f"owner{i}").read_text().strip() for i in range(2)]
        assert sorted(owned) == sorted(gpus), owned
        extra = _entrypoint(box, "sh", "-c", "exit 0", **env)
        assert extra.wait(30) == 1, "a third replica on a 2-GPU host must not start"
        assert "already has a worker" in (extra.stderr.read() if extra.stderr else "")
    finally:
        for p in holders:
            p.kill()
            p.wait(10)
    # a stopped worker's GPU is free again
    again = _entrypoint(box, "sh", "-c", 'echo "$CUDA_VISIBLE_DEVICES"', **env)
    assert again.wait(30) == 0 and again.stdout is not None and again.stdout.read().strip() in gpus
    # pinned by the operator: no lock, the given device
    pinned = _entrypoint(box, "sh", "-c", 'echo "$CUDA_VISIBLE_DEVICES"', CUDA_VISIBLE_DEVICES="3", **env)
    assert pinned.wait(30) == 0 and pinned.stdout is not None and pinned.stdout.read().strip() == "3"


def test_entrypoint_refuses_a_gpu_worker_without_gpus(tmp_path: Path) -> None:
    box = _toolbox(tmp_path, gpus=None)
    p = _entrypoint(box, "reasonlab", "worker", "--queue", "gpu", REASONLAB_GPU_LOCK_DIR=str(tmp_path / "l"))
    assert p.wait(30) == 1
    assert "NVIDIA Container Toolkit" in (p.stderr.read() if p.stderr else "")
    assert not (tmp_path / "reasonlab.log").exists(), "the worker must not start without a GPU"
