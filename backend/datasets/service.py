"""Project datasets: data files a member uploads so that a spec can name them (``dataset:<name>`` in a
data-path field, worker/specs/confine/paths.py) without shell access to the worker hosts.

A project member uploads (or replaces) one, any viewer lists them, a project admin or its uploader deletes
one. The bytes live in the artifact store (``REASONLAB_ARTIFACT_URL``, only the API opens it) at
``datasets/project-<id>/<name>/<sha256>``: a replacement is a new object, the row then points at it and
the old object is removed, so a reader always gets bytes that match the row's checksum. A run gets a
dataset only with its own token, and only one its spec names in its own project.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING

from sqlalchemy.orm import Session

from backend.datasets import repository
from backend.db import utcnow
from backend.errors import Forbidden, Invalid, NotFound, TooLarge
from backend.models import ProjectDataset, Run, User
from backend.projects import service as projects
from backend.store import CHUNK, ArtifactStore
from worker.specs import confine, manifest

if TYPE_CHECKING:
    from backend.auth.principal import Principal


def check_name(name: str) -> str:
    try:
        return confine.dataset_name(name)
    except confine.Refused as exc:
        raise Invalid(
            f"dataset name {name[:200]!r} refused: {exc}",
            [{"loc": ["path", "name"], "msg": str(exc), "type": "dataset_name"}],
        ) from None


def _project_folder(store: ArtifactStore, project_id: int) -> str:
    return f"{store.root}/datasets/project-{project_id}"


def object_path(store: ArtifactStore, project_id: int, name: str, sha256: str) -> str:
    """Where a dataset's bytes are kept; on a local store, refused if a link leads out of the project's
    folder."""
    full = f"{_project_folder(store, project_id)}/{name}/{sha256}"
    if store.is_local:
        base = os.path.realpath(_project_folder(store, project_id))
        real = os.path.realpath(full)
        if not real.startswith(base + os.sep):
            raise Forbidden(f"dataset {name!r}: its stored path leads out of the project's datasets")
    return full


def too_large(limit: int) -> TooLarge:
    return TooLarge(f"a dataset may hold at most {limit} bytes (REASONLAB_DATASET_MAX_BYTES)")


class Upload:
    """An upload being received: spooled to a temporary file (on a local store, inside the project's
    folder, so the final move is a rename), counted against the limit and hashed as it arrives."""

    def __init__(self, store: ArtifactStore, project_id: int, limit: int) -> None:
        self.store = store
        self.project_id = project_id
        self.limit = limit
        self.size = 0
        self.hash = hashlib.sha256()
        if store.is_local:
            folder = _project_folder(store, project_id)
            os.makedirs(folder, exist_ok=True)
            fd, self.spool = tempfile.mkstemp(prefix=".upload-", suffix=".tmp", dir=folder)
        else:
            fd, self.spool = tempfile.mkstemp(prefix="reasonlab-dataset-", suffix=".tmp")
        self.file: IO[bytes] = os.fdopen(fd, "wb")

    def write(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.limit:
            raise too_large(self.limit)
        self.hash.update(chunk)
        self.file.write(chunk)

    def commit(self, name: str) -> str:
        """Store the bytes as dataset ``name``; their sha256."""
        sha256 = self.hash.hexdigest()
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
        target = object_path(self.store, self.project_id, name, sha256)
        if self.store.is_local:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            object_path(self.store, self.project_id, name, sha256)  # no link planted meanwhile
            os.replace(self.spool, target)
        else:
            self.store.fs.put_file(self.spool, target)
        return sha256

    def discard(self) -> None:
        if not self.file.closed:
            self.file.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.spool)


def require_uploader_role(session: Session, principal: Principal, project_id: int) -> None:
    projects.require_role(session, principal, project_id, "member", f"project {project_id}")


def record(
    session: Session, principal: Principal, project_id: int, name: str, size: int, sha256: str
) -> tuple[ProjectDataset, str | None]:
    """Insert or update the row; the sha256 of the object it replaced (to remove), if another."""
    dataset = repository.by_name(session, project_id, name)
    old = None
    if dataset is None:
        dataset = ProjectDataset(project_id=project_id, name=name)
        session.add(dataset)
    else:
        old = dataset.sha256
    dataset.size = size
    dataset.sha256 = sha256
    dataset.uploaded_at = utcnow()
    dataset.uploaded_by_id = principal.user_id
    session.flush()
    return dataset, (old if old != sha256 else None)


def remove_object(store: ArtifactStore, project_id: int, name: str, sha256: str) -> None:
    with contextlib.suppress(OSError, Forbidden):
        store.fs.rm_file(object_path(store, project_id, name, sha256))


def list_datasets(session: Session, principal: Principal, project_id: int) -> list[ProjectDataset]:
    projects.require_role(session, principal, project_id, "viewer", f"project {project_id}")
    return repository.of_project(session, project_id)


def delete_dataset(session: Session, principal: Principal, project_id: int, name: str) -> str:
    """Delete the row (a project admin or its uploader); the sha256 of the object to remove."""
    role = projects.require_role(session, principal, project_id, "member", f"project {project_id}")
    dataset = repository.by_name(session, project_id, name)
    if dataset is None:
        raise NotFound(f"dataset {name!r} not found in project {project_id}")
    if role != "admin" and not principal.is_admin and dataset.uploaded_by_id != principal.user_id:
        raise Forbidden(f"only a project admin or its uploader deletes dataset {name!r}")
    sha256 = dataset.sha256
    session.delete(dataset)
    session.flush()
    return sha256


def names_in_spec(kind: str, spec: dict[str, object]) -> set[str]:
    model = manifest(kind).spec.model_validate(spec)
    return set(confine.dataset_references(model).values())


def dataset_for_run(session: Session, run: Run, name: str) -> ProjectDataset:
    """The dataset ``name`` of the run's project, for a run whose spec names it."""
    if name not in names_in_spec(run.kind, run.spec):
        raise Forbidden(f"run {run.id}'s spec names no dataset {name!r}")
    dataset = repository.by_name(session, run.project_id, name)
    if dataset is None:
        raise NotFound(f"dataset {name!r} not found in the run's project")
    return dataset


def chunks(store: ArtifactStore, project_id: int, name: str, sha256: str) -> Iterator[bytes]:
    with store.fs.open(object_path(store, project_id, name, sha256), "rb") as fh:
        while chunk := fh.read(CHUNK):
            yield chunk


def uploaded_by(dataset: ProjectDataset) -> str | None:
    user: User | None = dataset.uploaded_by
    return user.username if user is not None else None
