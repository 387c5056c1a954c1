"""The artifact store: every run's files under one fsspec URL (``REASONLAB_ARTIFACT_URL``: file://, s3://,
gs://, ... whatever fsspec has a file system for), laid out as ``<url>/runs/run-<id>/<relative path>``.

A floor below the domains, like the database (backend/db.py): the artifact routes, the project datasets
(under ``<url>/datasets/``) and the MLflow mirror (which copies a run's artifacts) all open it.

Only the API opens the store; workers reach it through the artifact routes with their token, so a GPU
host needs no shared volume and no storage credentials (docs/operations.md, Artifacts).

Writes are atomic where the store allows it: on a local file system the body goes to a temporary file
beside the target, is fsynced and renamed over it (os.replace); on an object store it is spooled to a local
temporary file and sent in one put, and an object store shows an object only once its put completed. A
reader therefore never sees half a checkpoint.

Paths given here are already clean (backend/artifacts/service.py, ``clean_path``); on a local store this
module also refuses a path that a symbolic link takes out of the run's folder (``Escapes``).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import IO, Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

CHUNK = 1024 * 1024  # bytes per read of a download


class Escapes(Exception):
    """A path a symbolic link takes outside the run's folder."""


class Occupied(Exception):
    """A path whose folder is a file, or which is itself a folder: no file can be written there."""


@dataclass(frozen=True)
class StoredFile:
    path: str  # relative to the run's folder, '/'-separated
    size: int
    modified: datetime | None


def _modified(info: dict[str, Any]) -> datetime | None:
    """The modification time fsspec reports, whatever the file system calls it."""
    for key in ("mtime", "LastModified", "updated", "last_modified", "modified"):
        value = info.get(key)
        if isinstance(value, int | float):
            return datetime.fromtimestamp(value, tz=UTC)
        if isinstance(value, datetime):
            return value if value.tzinfo else value.replace(tzinfo=UTC)
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
                return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


class Staged:
    """An upload being written: ``file`` takes the body; ``commit`` makes it visible at once, ``discard``
    drops it. Local store: a temporary file beside the target; object store: a local spool file."""

    def __init__(self, store: ArtifactStore, run_id: int, target: str) -> None:
        self.store = store
        self.run_id = run_id
        self.target = target
        if store.is_local:
            folder = os.path.dirname(target)
            store.check_inside(run_id, folder)
            if os.path.isdir(target):
                raise Occupied(target)
            try:
                os.makedirs(folder, exist_ok=True)
            except (FileExistsError, NotADirectoryError):  # a file where a folder of the path would be
                raise Occupied(target) from None
            fd, self.spool = tempfile.mkstemp(prefix=".upload-", suffix=".tmp", dir=folder)
        else:
            fd, self.spool = tempfile.mkstemp(prefix="reasonlab-upload-", suffix=".tmp")
        self.file: IO[bytes] = os.fdopen(fd, "wb")
        self.size = 0

    def write(self, chunk: bytes) -> None:
        self.file.write(chunk)
        self.size += len(chunk)

    def commit(self) -> None:
        try:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()
            if self.store.is_local:
                self.store.check_inside(self.run_id, self.target)  # no link planted meanwhile
                try:
                    os.replace(
                        self.spool, self.target
                    )  # atomic on POSIX: the old file or the new, never half
                except IsADirectoryError:  # a folder made at the target meanwhile
                    raise Occupied(self.target) from None
            else:
                self.store.fs.put_file(self.spool, self.target)  # one put: the object appears complete
        finally:
            self.discard()

    def discard(self) -> None:
        if not self.file.closed:
            self.file.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.spool)


class ArtifactStore:
    """The runs' files under ``url``; every method takes a run id and a clean relative path."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.fs, root = fsspec.core.url_to_fs(url)
        self.is_local = isinstance(self.fs, LocalFileSystem)
        self.root = os.path.realpath(root) if self.is_local else root.rstrip("/")

    def run_folder(self, run_id: int) -> str:
        return f"{self.root}/runs/run-{run_id}"

    def full_path(self, run_id: int, path: str) -> str:
        full = f"{self.run_folder(run_id)}/{path}"
        if self.is_local:
            self.check_inside(run_id, full)
        return full

    def check_inside(self, run_id: int, full: str) -> None:
        """Local store: ``full``, symbolic links resolved, must lie inside the run's folder (a link
        planted in the store must not serve /etc/passwd or take an upload elsewhere)."""
        run_root = os.path.realpath(self.run_folder(run_id))
        real = os.path.realpath(full)
        if real != run_root and not real.startswith(run_root + os.sep):
            raise Escapes(full)

    def files(self, run_id: int) -> list[StoredFile]:
        """Every file of the run, sorted by path; on a local store, links that leave it are left out."""
        folder = self.run_folder(run_id)
        if self.is_local:
            return self._local_files(folder)
        try:
            found = self.fs.find(folder, detail=True)
        except FileNotFoundError:
            return []
        prefix = folder.rstrip("/") + "/"
        return sorted(
            (
                StoredFile(name[len(prefix) :], int(info.get("size") or 0), _modified(info))
                for name, info in found.items()
                if name.startswith(prefix) and info.get("type", "file") == "file"
            ),
            key=lambda f: f.path,
        )

    def _local_files(self, folder: str) -> list[StoredFile]:
        if not os.path.isdir(folder):
            return []
        base = os.path.realpath(folder)
        found: list[StoredFile] = []
        for dirpath, _, filenames in os.walk(folder, followlinks=False):
            for name in filenames:
                full = os.path.join(dirpath, name)
                real = os.path.realpath(full)
                if not real.startswith(base + os.sep) or not os.path.isfile(real):
                    continue  # a link out of the run's folder, or to no file: not an artifact
                if name.startswith(".upload-"):
                    continue  # an upload in progress
                stat = os.stat(real)
                relative = os.path.relpath(full, folder).replace(os.sep, "/")
                found.append(
                    StoredFile(relative, stat.st_size, datetime.fromtimestamp(stat.st_mtime, tz=UTC))
                )
        return sorted(found, key=lambda f: f.path)

    def stat(self, run_id: int, path: str) -> StoredFile | None:
        """The file at ``path``, or None (missing, or a folder)."""
        full = self.full_path(run_id, path)
        try:
            info = self.fs.info(full)
        except OSError:  # missing, a file used as a folder, a name too long for the file system
            return None
        if info.get("type") != "file":
            return None
        return StoredFile(path, int(info.get("size") or 0), _modified(info))

    def chunks(self, run_id: int, path: str) -> Iterator[bytes]:
        """The file's bytes, ``CHUNK`` at a time (a download is streamed, never read whole)."""
        with self.fs.open(self.full_path(run_id, path), "rb") as fh:
            while chunk := fh.read(CHUNK):
                yield chunk

    def stage(self, run_id: int, path: str) -> Staged:
        return Staged(self, run_id, self.full_path(run_id, path))

    def delete(self, run_id: int, path: str) -> bool:
        """Remove the file; False when there was none."""
        full = self.full_path(run_id, path)
        if self.stat(run_id, path) is None:
            return False
        with contextlib.suppress(FileNotFoundError):  # a concurrent delete
            self.fs.rm_file(full)
        return True


@lru_cache(maxsize=8)
def store_for(url: str) -> ArtifactStore:
    """One store per URL and process (fsspec file systems keep connections and caches)."""
    return ArtifactStore(url)
