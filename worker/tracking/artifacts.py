"""A platform run's artifacts in the API's store, so that they reach every worker host.

The worker keeps a local copy under its artifact root (``<root>/checkpoints/run-<id>``, the run's
``out_dir`` ``<root>/runs/run-<id>``) and mirrors it to the API (``PUT /runs/{id}/artifacts/...``, the
worker token): a checkpoint once written (the newest ``keep`` kept there too), the out_dir and the final
model once the run succeeded. A new attempt on a host that never saw the run pulls the newest checkpoint
back before it loads one; ``run_outputs`` pulls another run's outputs. A GPU host thus needs only the
broker URL, the API URL and its token (DESIGN.md); where the bytes live is the API's setting
(``REASONLAB_ARTIFACT_URL``: a folder, s3://, gs://, ...).

Store layout (backend/artifacts/service.py): ``checkpoints/step-<n>.pt``, ``outputs/<out_dir files>``,
``model/step-<n>.pt`` (the newest checkpoint of a succeeded run: its final model).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

from reasonlab_sdk.client import ApiUnavailable, Invalid, NotFound, ReasonLabClient
from worker.tracking.checkpoints import checkpoint_files

logger = logging.getLogger(__name__)

T = TypeVar("T")
CHECKPOINTS = "checkpoints"
OUTPUTS = "outputs"
MODEL = "model"


def _step_of(path: str) -> int | None:
    name = path.rsplit("/", 1)[-1]
    if name.startswith("step-") and name.endswith(".pt") and name[5:-3].isdigit():
        return int(name[5:-3])
    return None


class TransferCancelled(RuntimeError):
    """A transfer given up because the run was cancelled (a cancel stops a run in any phase: a download
    before the kind's loop, the upload of its outputs at the end)."""


class RunArtifacts:
    """The artifacts of one attempt of one run, through the API; every call retries while the API is
    unavailable, up to ``deadline`` seconds, then raises ``ApiUnavailable``. When ``stop()`` turns true
    (the run was cancelled), the next file, or the next retry, raises ``TransferCancelled`` instead."""

    def __init__(
        self,
        client: ReasonLabClient,
        run_id: int,
        attempt: int,
        *,
        deadline: float = 600.0,
        stop: Callable[[], bool] | None = None,
    ) -> None:
        self.client = client
        self.run_id = run_id
        self.attempt = attempt
        self.deadline = deadline
        self.stop = stop

    def _check(self, what: str) -> None:
        if self.stop is not None and self.stop():
            raise TransferCancelled(f"run {self.run_id}: {what}: not done, the run was cancelled")

    def _retry(self, call: Callable[[], T], what: str, *, stoppable: bool = True) -> T:
        """``call()``, retried while the API is unavailable; a cancel ends it first (``stoppable``)."""
        end = time.monotonic() + self.deadline
        delay = 0.5
        while True:
            if stoppable:
                self._check(what)
            try:
                return call()
            except ApiUnavailable as exc:
                if time.monotonic() + delay > end:
                    raise
                logger.warning(
                    "run %s: %s: API unavailable (%s); retrying in %.1f s", self.run_id, what, exc, delay
                )
                waited = 0.0
                while waited < delay:  # in slices, so that a cancel ends the wait
                    if stoppable:
                        self._check(what)
                    time.sleep(min(0.25, delay - waited))
                    waited += 0.25
                delay = min(delay * 2, 10.0)

    def _push(self, path: str, source: Path, *, stoppable: bool = True) -> None:
        self._retry(
            lambda: self.client.upload_artifact(self.run_id, path, source, attempt=self.attempt),
            f"upload {path}",
            stoppable=stoppable,
        )

    def stored(self, run_id: int, folder: str, *, stoppable: bool = True) -> dict[str, int]:
        """``{path: size}`` of run ``run_id``'s files under ``folder/``."""
        listing = self._retry(
            lambda: self.client.list_artifacts(run_id), "list artifacts", stoppable=stoppable
        )
        return {i["path"]: i["size"] for i in listing["items"] if i["path"].startswith(folder + "/")}

    # -- checkpoints ------------------------------------------------------------------------------------

    def push_checkpoint(self, local: Path, step: int, keep: int) -> None:
        """Upload ``local`` as ``checkpoints/step-<step>.pt``, then drop the stored ones older than the
        newest ``keep`` (after the upload: the store always holds a complete checkpoint). Not stopped by a
        cancel: a kind checkpoints when it is cancelled, and a retry resumes from that checkpoint."""
        self._push(f"{CHECKPOINTS}/step-{step}.pt", local, stoppable=False)
        stored = self.stored(self.run_id, CHECKPOINTS, stoppable=False)
        steps = sorted(s for p in stored if (s := _step_of(p)) is not None)
        for old in steps[:-keep]:
            delete = partial(
                self.client.delete_artifact, self.run_id, f"{CHECKPOINTS}/step-{old}.pt", attempt=self.attempt
            )
            with contextlib.suppress(NotFound):  # another call removed it first
                self._retry(delete, "delete an old checkpoint", stoppable=False)

    def pull_checkpoints(self, directory: Path) -> list[int]:
        """Download the stored checkpoints newer than the newest in ``directory`` (a host that never ran
        this run has none); the steps downloaded."""
        local = checkpoint_files(directory)
        newest_local = local[-1][0] if local else -1
        pulled = []
        for path in sorted(self.stored(self.run_id, CHECKPOINTS), key=lambda p: _step_of(p) or -1):
            step = _step_of(path)
            if step is None or step <= newest_local:
                continue
            download = partial(
                self.client.download_artifact, self.run_id, path, directory / f"step-{step}.pt"
            )
            self._retry(download, f"download {path}")
            pulled.append(step)
        return pulled

    # -- outputs and the final model --------------------------------------------------------------------

    def push_outputs(self, out_dir: Path, checkpoint_dir: Path) -> int:
        """A succeeded run: every file of ``out_dir`` under ``outputs/`` and its newest checkpoint as
        ``model/step-<n>.pt``; the number of files uploaded."""
        count = 0
        if out_dir.is_dir():
            for path in sorted(p for p in out_dir.rglob("*") if p.is_file() and not p.name.startswith(".")):
                name = f"{OUTPUTS}/{path.relative_to(out_dir).as_posix()}"
                try:
                    self._push(name, path)
                except Invalid as exc:  # a name the store refuses ('%', a backslash): the rest still goes
                    logger.warning("run %s: output %s not stored: %s", self.run_id, name, exc)
                    continue
                count += 1
        for step, path in checkpoint_files(checkpoint_dir)[-1:]:
            self._push(f"{MODEL}/step-{step}.pt", path)
            count += 1
        return count

    def pull_outputs(self, run_id: int, directory: Path) -> int:
        """Download run ``run_id``'s ``outputs/`` into ``directory`` (files already there with the same
        size are kept: the same host, or a second call); the number of files downloaded."""
        count = 0
        for path, size in sorted(self.stored(run_id, OUTPUTS).items()):
            dest = directory / path.removeprefix(OUTPUTS + "/")
            if dest.is_file() and dest.stat().st_size == size:
                continue
            self._retry(partial(self.client.download_artifact, run_id, path, dest), f"download {path}")
            count += 1
        return count
