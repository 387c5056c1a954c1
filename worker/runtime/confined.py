"""The worker's side of spec confinement (docs/spec-confinement.md): a spec's file and model names resolved
inside their stores, re-checked after every symlink is resolved, so a run reads and writes nothing outside
the offline data store, the model store, the worker's cache and its own out_dir.

The spec already refused absolute paths, ``..``, ``~`` and URLs (``worker.specs.confine``, checked again
here); the stores' roots are the worker's (``worker.core.data.offline``), all under its cache root
(``REASONLAB_CACHE``): ``data/``, ``models/`` and, for caches a spec names, ``<kind>/``. A refusal is the
confinement's one error, ``worker.specs.confine.Refused`` (a RunError), its message starting with the
spec field, raised before anything is opened. A data path ``dataset:<name>`` names a dataset uploaded to
the run's project: the run's context downloads it with the run's token into the run's own folder
(``datasets_from``, set while the kind runs on the platform); a local run (``reasonlab run``) refuses it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from worker.core.data.offline import OutsideStore, cache_root, data_root, inside, local_model, model_root
from worker.specs.confine import Refused, relative_path, uploaded_dataset


def _relative(value: str, field: str, what: str) -> str:
    try:
        return relative_path(value, what)
    except Refused as exc:
        raise Refused(f"{field}: {exc}") from None


DatasetFetcher = Callable[[str, str], Path]
"""``(name, field) -> local file``: how the running run gets a dataset uploaded to its project."""

_fetcher: ContextVar[DatasetFetcher | None] = ContextVar("reasonlab_dataset_fetcher", default=None)


@contextmanager
def datasets_from(fetch: DatasetFetcher) -> Iterator[None]:
    """While the kind runs, ``dataset:<name>`` data paths are fetched with ``fetch`` (the run's context:
    ``ApiRunContext.fetch_dataset``, with the run's own token)."""
    token = _fetcher.set(fetch)
    try:
        yield
    finally:
        _fetcher.reset(token)


def _uploaded(value: str, field: str) -> Path | None:
    """The local copy of the dataset a ``dataset:<name>`` data path names, or None for a store path."""
    try:
        name = uploaded_dataset(value)
    except Refused as exc:
        raise Refused(f"{field}: {exc}") from None
    if name is None:
        return None
    fetch = _fetcher.get()
    if fetch is None:
        raise Refused(
            f"{field}: {value!r} is a dataset uploaded to a project: only a run on the platform fetches it "
            "(a local run names a file of the data store instead, docs/spec-confinement.md)"
        )
    path = fetch(name, field)
    if not path.is_file():
        raise Refused(f"{field}: dataset {name!r} was not fetched")
    return path


def data_file(value: str, field: str) -> Path:
    """The real path of a file of the offline data store named by a spec (``data.path``, ...), or, for
    ``dataset:<name>``, of the run's local copy of a dataset uploaded to its project."""
    uploaded = _uploaded(value, field)
    if uploaded is not None:
        return uploaded
    relative = _relative(value, field, "a data file")
    try:
        path = inside(data_root(), relative)
    except OutsideStore:
        raise Refused(f"{field}: {value!r} leads outside the data store") from None
    if not path.is_file():
        raise Refused(
            f"{field}: no file {relative!r} in the data store ({data_root()}): an admin puts data files "
            "there (docs/spec-confinement.md)"
        )
    return path


def model_folder(value: str, field: str) -> Path:
    """The real path of a saved model folder of the model store named by a spec (``init.path``, ...)."""
    relative = _relative(value, field, "a model folder")
    try:
        path = inside(model_root(), relative)
    except OutsideStore:
        raise Refused(f"{field}: {value!r} leads outside the model store") from None
    if not path.is_dir():
        raise Refused(f"{field}: no folder {relative!r} in the model store ({model_root()})")
    return path


def model_name(value: str, field: str, known: Iterable[str] = ()) -> str:
    """Check a spec's model name (a preset or alias in ``known``, a folder of the model store or a Hugging
    Face id) and return it unchanged: the loaders resolve it again the same way (``offline.local_model``)."""
    if value in set(known):
        return value
    relative = _relative(value, field, "a model name")
    try:
        local_model(relative)
    except OutsideStore as exc:
        raise Refused(f"{field}: {exc}") from None
    return value


def hub_dataset(value: str, field: str) -> str:
    """A Hugging Face dataset id as a spec names it: never read from the worker's working directory."""
    _relative(value, field, "a dataset id")
    if os.path.lexists(value):
        raise Refused(f"{field}: {value!r} names a local path of the worker, not a hub dataset")
    return value


def cache_folder(name: str | None, field: str, kind: str) -> Path:
    """``<cache root>/<kind>`` or, named, ``<cache root>/<kind>/<name>`` (a name, never a path)."""
    base = cache_root() / kind
    if name is None:
        return base
    relative = _relative(name, field, "a cache name")
    if "/" in relative:
        raise Refused(f"{field}: a cache is a name, not a path")
    try:
        return inside(base, relative)
    except OutsideStore:
        raise Refused(f"{field}: {name!r} leads outside the cache") from None
