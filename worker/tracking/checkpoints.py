"""Checkpoints of a run: ``step-<n>.pt`` files written atomically (temporary file, fsync, rename), the
newest ``keep`` kept; loading falls back to an older one when the newest is unreadable."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

_CHECKPOINT_RE = re.compile(r"^step-(\d+)\.pt$")


def checkpoint_files(directory: Path) -> list[tuple[int, Path]]:
    """``(step, path)`` of every complete checkpoint in ``directory``, oldest first."""
    if not directory.is_dir():
        return []
    found = []
    for path in directory.iterdir():
        match = _CHECKPOINT_RE.match(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def save_checkpoint_file(directory: Path, state: dict[str, Any], step: int, keep: int = 2) -> Path:
    """Write ``state`` to ``directory/step-<step>.pt`` atomically and keep the newest ``keep``.

    torch.save goes to a temporary file in the same folder, which is fsynced and renamed over the final
    name (os.replace is atomic on POSIX), so a crash mid-write never leaves a truncated checkpoint.
    """
    import torch  # here: the worker's own processes list checkpoints; only a run's job process writes one

    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"step-{step}.pt"
    fd, tmp_name = tempfile.mkstemp(prefix=f".step-{step}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            torch.save(state, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_name, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    with contextlib.suppress(OSError):  # persist the rename itself
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    for _, old in checkpoint_files(directory)[:-keep]:
        with contextlib.suppress(FileNotFoundError):
            old.unlink()
    return final


def load_checkpoint_file(directory: Path) -> tuple[dict[str, Any], int] | None:
    """The newest readable checkpoint ``(state, step)`` in ``directory``, or None."""
    import torch

    for step, path in reversed(checkpoint_files(directory)):
        try:
            # Checkpoints are written by this worker under the platform's artifact root (trusted like the
            # code itself), and kinds may store any picklable state (RNG states, numpy arrays).
            state = torch.load(path, map_location="cpu", weights_only=False)
        except Exception as exc:
            logger.warning("checkpoint %s is unreadable (%s); trying an older one", path, exc)
            continue
        return state, step
    return None
