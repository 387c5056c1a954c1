"""A run's artifacts: which paths may name one, what kind each is, and the listing.

A path is relative to the run's artifacts and starts with one of ``FOLDERS``. Anything that could reach
outside the run's folder is refused with a 422 naming the path parameter, before the store is touched:
``..`` and ``.`` segments, an absolute path (``/etc/passwd``, ``C:/...``, ``\\\\server``), a backslash, an
empty segment (``a//b``), a ``%`` (a still-encoded ``%2e%2e`` after the server decoded the URL once),
control characters. A symbolic link inside a local store that leads out of the run's folder is refused
too (backend/store.py, ``Escapes``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from backend.artifacts.schemas import ArtifactKind, ArtifactList, ArtifactPublic
from backend.errors import Conflict, Invalid, NotFound
from backend.store import ArtifactStore, Escapes, Occupied, StoredFile

FOLDERS: dict[str, ArtifactKind] = {"checkpoints": "checkpoint", "outputs": "output", "model": "model"}
MAX_PATH = 1024  # characters
MAX_SEGMENT = 255  # bytes of one name on common file systems
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DRIVE = re.compile(r"^[A-Za-z]:")


def _refuse(path: str, why: str) -> Invalid:
    return Invalid(
        f"artifact path {path[:200]!r} refused: {why}",
        [{"loc": ["path", "path"], "msg": why, "type": "artifact_path"}],
    )


def clean_path(path: str) -> str:
    """``path`` when it safely names a file among a run's artifacts, else Invalid (422)."""
    if not path:
        raise _refuse(path, "empty")
    if len(path) > MAX_PATH:
        raise _refuse(path, f"longer than {MAX_PATH} characters")
    if path.startswith(("/", "\\", "~")) or _DRIVE.match(path):
        raise _refuse(path, "an absolute path")
    if "\\" in path:
        raise _refuse(path, "a backslash ('/' separates folders)")
    if "%" in path:
        raise _refuse(path, "an encoded character ('%'): send the path decoded once, as a URL carries it")
    if _CONTROL.search(path):
        raise _refuse(path, "a control character")
    segments = path.split("/")
    for segment in segments:
        if segment in ("", ".", ".."):
            raise _refuse(path, "an empty, '.' or '..' segment")
        if len(segment.encode("utf-8", "surrogatepass")) > MAX_SEGMENT:
            raise _refuse(path, f"a name longer than {MAX_SEGMENT} bytes")
    if segments[0] not in FOLDERS or len(segments) < 2:
        raise _refuse(path, f"not a file under {', '.join(f + '/' for f in FOLDERS)}")
    return path


def kind_of(path: str) -> ArtifactKind:
    return FOLDERS[path.split("/", 1)[0]]


def public(file: StoredFile) -> ArtifactPublic:
    return ArtifactPublic(path=file.path, size=file.size, modified=file.modified, kind=kind_of(file.path))


def listing(store: ArtifactStore, run_id: int) -> ArtifactList:
    """Every file of the run under ``FOLDERS`` (anything else in its folder is not the API's)."""
    items = [public(f) for f in store.files(run_id) if f.path.split("/", 1)[0] in FOLDERS and "/" in f.path]
    return ArtifactList(run_id=run_id, items=items, count=len(items), total_size=sum(i.size for i in items))


def stat(store: ArtifactStore, run_id: int, path: str) -> StoredFile | None:
    """The stored file at a clean ``path`` (None when there is none); Invalid when a link leads out."""
    try:
        return store.stat(run_id, path)
    except Escapes:
        raise _refuse(path, "a symbolic link out of the run's artifacts") from None


def escapes(path: str) -> Invalid:
    return _refuse(path, "a symbolic link out of the run's artifacts")


@contextmanager
def store_errors(run_id: int, path: str) -> Iterator[None]:
    """The store's refusals of a write at a clean ``path`` as API errors: a link out of the run's folder
    (422), a folder in the way or a file where a folder would be (409)."""
    try:
        yield
    except Escapes:
        raise escapes(path) from None
    except Occupied:
        raise Conflict(
            f"run {run_id} has a folder at {path!r}, or a file where one of its folders would be"
        ) from None


def delete(store: ArtifactStore, run_id: int, path: str) -> None:
    """Remove the file at a clean ``path``; NotFound when there is none."""
    with store_errors(run_id, path):
        found = store.delete(run_id, path)
    if not found:
        raise NotFound(f"run {run_id} has no artifact {path!r}")
