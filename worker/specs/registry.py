"""The kind registry, built from manifests by convention (nothing to edit when a kind is added).

Where manifests come from, in order:
1. every public module of a family package of ``worker.specs`` (``worker/specs/<family>/<name>.py``: the
   kinds in this repository), each of which must define ``MANIFEST``: what a family's kinds share lives
   in a subpackage of the family (``worker/specs/<family>/common/``) or a ``_``-prefixed module, and the
   modules at the package's root (base, manifest, registry, placement, secrets...) are helpers, not kinds,
   as is the ``confine`` package (its modules are all ``_``-prefixed);
2. the modules named in ``REASONLAB_KIND_PLUGINS`` (comma-separated), each defining ``MANIFEST``;
3. the ``reasonlab.kinds`` entry points of installed distributions (each value a module defining
   ``MANIFEST``).

The API, the worker and ``reasonlab run`` all read this registry, so a plugin must be importable (and
listed) in each of their processes.
"""

from __future__ import annotations

import functools
import importlib
import os
import pkgutil
from dataclasses import dataclass
from importlib.metadata import entry_points

from pydantic import BaseModel

from worker.specs.base import SpecBase
from worker.specs.manifest import KindManifest

PLUGINS_ENV = "REASONLAB_KIND_PLUGINS"
ENTRY_POINT_GROUP = "reasonlab.kinds"


class UnknownKind(KeyError, ValueError):
    """A kind or result kind that no manifest declares. The one place that error is worded."""

    def __init__(self, what: str, name: object, known: list[str]) -> None:
        self.what, self.name, self.known = what, name, known
        super().__init__(self.message)

    @property
    def message(self) -> str:
        return f"unknown {self.what} {self.name!r}; known: {', '.join(self.known) or 'none'}"

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class Registry:
    kinds: dict[str, KindManifest]
    results: dict[str, type[BaseModel]]


class MissingManifest(ValueError):
    """A module the registry reads as a kind declares no ``MANIFEST``."""

    def __init__(self, module_name: str, what: str, hint: str = "") -> None:
        self.module_name = module_name
        super().__init__(f"{what} {module_name!r} defines no MANIFEST{hint}")


def _family_modules(package_name: str = "worker.specs") -> list[str]:
    """The public modules of each family package (``<package>.<family>.<name>``), sorted; a family's
    subpackages hold what its kinds share, so they are not read."""
    package = importlib.import_module(package_name)
    names: list[str] = []
    for family in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not family.ispkg or family.name.startswith("_"):
            continue
        sub = importlib.import_module(f"{package_name}.{family.name}")
        names += [
            f"{package_name}.{family.name}.{m.name}"
            for m in sorted(pkgutil.iter_modules(sub.__path__), key=lambda m: m.name)
            if not m.ispkg and not m.name.startswith("_")
        ]
    return names


def _module_names() -> list[str]:
    names = _family_modules()
    plugins = [p.strip() for p in os.environ.get(PLUGINS_ENV, "").split(",") if p.strip()]
    names += plugins
    names += [ep.value.partition(":")[0] for ep in entry_points(group=ENTRY_POINT_GROUP)]
    return list(dict.fromkeys(names))


@functools.cache
def registry() -> Registry:
    """Every declared kind and result type; raises on a malformed or conflicting manifest."""
    kinds: dict[str, KindManifest] = {}
    results: dict[str, type[BaseModel]] = {}
    for module_name in _module_names():
        manifest = getattr(importlib.import_module(module_name), "MANIFEST", None)
        if manifest is None:
            if module_name.startswith("worker.specs."):
                hint = " (what a family's kinds share lives in a subpackage of the family, e.g. common/)"
                raise MissingManifest(module_name, "kind module", hint)
            raise MissingManifest(module_name, "kind plugin module")
        if not isinstance(manifest, KindManifest):
            raise TypeError(f"{module_name}.MANIFEST is a {type(manifest).__name__}, not a KindManifest")
        if manifest.name in kinds:
            raise ValueError(f"kind {manifest.name!r} is declared twice (again in {module_name})")
        kinds[manifest.name] = manifest
        for record, name in zip(manifest.results, manifest.result_kinds):
            if results.setdefault(name, record) is not record:
                raise ValueError(f"result kind {name!r} is declared by two different classes")
    return Registry(dict(sorted(kinds.items())), dict(sorted(results.items())))


def reload() -> Registry:
    """Forget the cached registry (tests that add a plugin in-process)."""
    registry.cache_clear()
    return registry()


def manifests() -> dict[str, KindManifest]:
    return registry().kinds


def manifest(name: object) -> KindManifest:
    found = registry().kinds.get(name) if isinstance(name, str) else None
    if found is None:
        raise UnknownKind("kind", name, list(registry().kinds))
    return found


def spec_class(name: object) -> type[SpecBase]:
    return manifest(name).spec


def result_class(kind: object) -> type[BaseModel]:
    found = registry().results.get(kind) if isinstance(kind, str) else None
    if found is None:
        raise UnknownKind("result kind", kind, list(registry().results))
    return found
