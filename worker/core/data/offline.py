"""Where the offline material lies: the npm folder ``offline/`` of the repository (installed by ``make``
with ``npm ci --ignore-scripts``) and the cache the platform lays things out in.

``REASONLAB_OFFLINE_NPM`` points at another ``node_modules`` folder (a worker image that copies it
elsewhere); ``REASONLAB_CACHE`` at another cache root (default ``$XDG_CACHE_HOME/reasonlab`` or
``~/.cache/reasonlab``). The cache outlives platform homes and clones, so a one-time conversion (WordNet
layout, a GGUF model turned into safetensors) is done once per machine.
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
