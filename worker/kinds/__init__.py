"""Experiment kinds: one module per kind, each exporting ``KIND = Kind(name, Spec, run)``.

``run(spec, ctx)`` turns a validated spec into calls of the research core (``worker.core``) and reports
through the RunContext (``worker.tracking``): params, metrics, results, progress, checkpoints.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from worker.specs import SPECS

if TYPE_CHECKING:
    from worker.tracking import RunContext


@dataclass(frozen=True)
class Kind:
    name: str
    spec: type[Any]
    run: Callable[[Any, RunContext], None]


# kind name -> module implementing it (imported lazily: kinds import torch)
_MODULES: dict[str, str] = {
    "diagnostic": "worker.kinds.diagnostic",
    "smoe_sraven": "worker.kinds.smoe_sraven",
}


def get_kind(name: str) -> Kind:
    """The registered kind called ``name``; KeyError naming the known kinds otherwise."""
    if name not in _MODULES:
        raise KeyError(f"unknown kind {name!r}; known kinds: {', '.join(sorted(_MODULES))}")
    kind: Kind = importlib.import_module(_MODULES[name]).KIND
    assert kind.name == name and kind.spec is SPECS[name], f"kind module for {name!r} is inconsistent"
    return kind


def kind_names() -> list[str]:
    return sorted(_MODULES)
