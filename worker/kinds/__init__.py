"""Experiment kinds: one package per paper family, one module per kind, ``worker/kinds/<family>/<name>.py``,
defining ``run(spec, ctx)``; a family never imports another's (what they share lives in ``worker.core``
or ``worker.tracking``).

``run`` turns a validated spec into calls of the research core (``worker.core``) and reports through the
RunContext: params, metrics, results, progress, checkpoints. Which function runs a kind is its manifest's
business (``worker.specs``): by convention the module mirroring the spec's (``worker.specs.<family>.<name>``
-> ``worker.kinds.<family>.<name>:run``), or the ``runner`` a plugin names.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from worker.specs import manifest, manifests

if TYPE_CHECKING:
    from worker.tracking.context import RunContext


@dataclass(frozen=True)
class Kind:
    name: str
    spec: type[Any]
    run: Callable[[Any, RunContext], None]


def get_kind(name: str) -> Kind:
    """The kind called ``name`` with its run function (imported lazily: kinds import torch).

    Raises ``worker.specs.UnknownKind`` for a name no manifest declares."""
    declared = manifest(name)
    module, function = declared.runner_path
    run = getattr(importlib.import_module(module), function, None)
    if not callable(run):
        raise TypeError(f"kind {name!r}: {module}.{function} is not a function run(spec, ctx)")
    return Kind(name=name, spec=declared.spec, run=run)


def kind_names() -> list[str]:
    return list(manifests())
