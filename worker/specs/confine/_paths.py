"""What a spec may name on disk (docs/spec-confinement.md): files inside the platform's stores, models by
preset, alias, store folder or Hugging Face id, Hugging Face datasets by id, the worker's caches by name,
and datasets uploaded to the run's project (``dataset:<name>``). Syntactic checks, no file system: the
worker resolves the value inside its store and checks again once every symlink is resolved
(``worker.runtime.confined``).

- a store path (``DataPath``, ``ModelFolder``) is relative to its store: no absolute path, no ``..``, no
  ``~``, no drive or URL (no ``:``), no backslash, no hidden component; a ``DataPath`` may instead name a
  dataset uploaded to the run's project, ``dataset:<name>`` (a file name, never a path);
- a model name (``ModelName``) is a preset, an alias, a folder of the model store or a Hugging Face id, so
  it obeys the store-path rules (an id ``org/name`` is one);
- a Hugging Face dataset id (``HubDatasetId``) is ``name`` or ``org/name``, never a path or a packaged
  builder (``csv``, ``json``, ...) that would read local files; its configuration (``HubConfigName``) and
  a cache (``CacheName``) are bare names.
"""

from __future__ import annotations

import re
import typing
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel
from pydantic_core import PydanticCustomError

from worker.specs.confine._fields import Confined
from worker.specs.confine._refusal import CONTROL, Refused, field_error


def relative_path(value: str, what: str = "a path") -> str:
    """``value`` as a normalised path relative to a store (``a/./b//c`` -> ``a/b/c``), or Refused."""
    if not value or not value.strip():
        raise Refused(f"{what} must not be empty")
    if CONTROL.search(value):
        raise Refused(f"{what} must not hold control characters")
    if "\\" in value:
        raise Refused(f"{what} uses / between folders, never a backslash")
    if ":" in value:
        raise Refused(f"{what} is relative to its store: no URL, scheme or drive (no ':')")
    if value.startswith("/"):
        raise Refused(f"{what} is relative to its store: no absolute path")
    if value.startswith("~"):
        raise Refused(f"{what} is relative to its store: no home folder (~)")
    parts = [p for p in value.split("/") if p not in ("", ".")]
    if not parts:
        raise Refused(f"{what} names no file")
    for part in parts:
        if part == "..":
            raise Refused(f"{what} must stay inside its store: no '..'")
        if part.startswith("."):
            raise Refused(f"{what} must not name a hidden file or folder ({part!r})")
        if part != part.strip():
            raise Refused(f"{what} must not start or end a name with blanks ({part!r})")
    return "/".join(parts)


DATASET_PREFIX = "dataset:"  # a spec's data-path field naming a dataset uploaded to the run's project
DATASET_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
_DATASET_NAME = re.compile(DATASET_NAME_PATTERN)


def dataset_name(value: str) -> str:
    """A project dataset's name (a file name: letters, digits, ``. _ -``, at most 128, no ``..``), or
    Refused."""
    if not _DATASET_NAME.match(value) or ".." in value:
        raise Refused(
            "a dataset name is a file name (letters, digits, . _ -, at most 128, starting with a letter or "
            "digit, no '..'), never a path"
        )
    return value


def uploaded_dataset(value: str) -> str | None:
    """The dataset name of a data path ``dataset:<name>`` (checked), or None for a store path."""
    if not value.startswith(DATASET_PREFIX):
        return None
    return dataset_name(value[len(DATASET_PREFIX) :])


def _data_path(value: str) -> str:
    try:
        name = uploaded_dataset(value)
        if name is not None:
            return DATASET_PREFIX + name
        return relative_path(value, "a data file")
    except Refused as exc:
        raise field_error("path_refused", exc) from None


def _model_folder(value: str) -> str:
    try:
        return relative_path(value, "a model folder")
    except Refused as exc:
        raise field_error("path_refused", exc) from None


def _model_name(value: str) -> str:
    """A preset, an alias, a folder of the model store or a Hugging Face id (``org/name``): all are
    store-relative names, so an absolute path, ``..`` or a URL is refused."""
    try:
        return relative_path(value, "a model name (preset, alias, model-store folder or Hugging Face id)")
    except Refused as exc:
        raise field_error("model_name_refused", exc) from None


_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")
_CONFIG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# datasets' packaged builders read local files (data_files, data_dir): never a dataset a spec names
PACKAGED_BUILDERS = frozenset(
    {
        "arrow", "audiofolder", "cache", "csv", "eval", "folder_based_builder", "generator", "hdf5",
        "imagefolder", "json", "lance", "niftifolder", "pandas", "parquet", "pdffolder", "spark", "sql",
        "text", "videofolder", "webdataset", "xml",
    }
)  # fmt: skip


def _hub_dataset(value: str) -> str:
    if not _HUB_ID.match(value) or ".." in value:
        raise PydanticCustomError(
            "dataset_refused",
            "a Hugging Face dataset id is name or org/name (letters, digits, . _ -), never a path or URL",
        )
    if value.lower() in PACKAGED_BUILDERS:
        raise PydanticCustomError(
            "dataset_refused",
            "{name!r} is a datasets builder that reads local files: name a hub dataset (files: source "
            "jsonl or csv with a path in the data store)",
            {"name": value},
        )
    return value


def _hub_config(value: str) -> str:
    if not _CONFIG.match(value) or ".." in value:
        raise PydanticCustomError(
            "dataset_refused", "a dataset configuration is a name (letters, digits, . _ -), never a path"
        )
    return value


_CACHE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def _cache_name(value: str) -> str:
    if not _CACHE_NAME.match(value) or ".." in value:
        raise PydanticCustomError(
            "path_refused",
            "a cache is a name (letters, digits, . _ -, at most 64), a folder under the worker's cache "
            "root: never a path",
        )
    return value


DataPath = Annotated[str, AfterValidator(_data_path), Confined("data")]
"""A file of the offline data store (``<cache root>/data``), relative to it, or ``dataset:<name>``: a
dataset uploaded to the run's project (the backend checks it exists at submission; the worker fetches
it with the run's token)."""
ModelFolder = Annotated[str, AfterValidator(_model_folder), Confined("model")]
"""A saved model folder inside the model store (``<cache root>/models``), relative to it."""
ModelName = Annotated[str, AfterValidator(_model_name), Confined("model-or-hub")]
"""A preset, a store alias, a folder of the model store (relative) or a Hugging Face id."""
HubDatasetId = Annotated[str, AfterValidator(_hub_dataset), Confined("hub-dataset")]
HubConfigName = Annotated[str, AfterValidator(_hub_config), Confined("name")]
CacheName = Annotated[str, AfterValidator(_cache_name), Confined("cache-name")]


def _holds_data_path(annotation: Any) -> bool:
    """The annotation is or holds ``DataPath`` (``DataPath | None``, ``list[DataPath]``, ...)."""
    return any(
        (isinstance(arg, Confined) and arg.how == "data") or _holds_data_path(arg)
        for arg in typing.get_args(annotation)
    )


def dataset_references(spec: BaseModel) -> dict[tuple[str | int, ...], str]:
    """Every uploaded dataset a validated spec names in a data-path field: field path -> dataset name."""
    found: dict[tuple[str | int, ...], str] = {}

    def strings(value: Any, path: tuple[str | int, ...]) -> None:
        if isinstance(value, str):
            name = uploaded_dataset(value)
            if name is not None:
                found[path] = name
        elif isinstance(value, list | tuple):
            for i, item in enumerate(value):
                strings(item, (*path, i))
        elif isinstance(value, dict):
            for key, item in value.items():
                strings(item, (*path, str(key)))

    def walk(value: Any, path: tuple[str | int, ...]) -> None:
        if isinstance(value, BaseModel):
            for name, info in type(value).model_fields.items():
                child = getattr(value, name)
                marked = any(isinstance(m, Confined) and m.how == "data" for m in info.metadata)
                if marked or _holds_data_path(info.annotation):
                    strings(child, (*path, name))
                else:
                    walk(child, (*path, name))
        elif isinstance(value, list | tuple):
            for i, item in enumerate(value):
                walk(item, (*path, i))
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(item, (*path, str(key)))

    walk(spec, ())
    return found
