"""Experiment specs and result schemas, one module per kind. Imports pydantic only (DESIGN.md).

``SPECS`` maps a kind's name to its spec class; ``RESULTS`` maps a result record's kind to its schema.
The backend validates submitted specs and posted results against these without importing torch.
"""

from __future__ import annotations

from pydantic import BaseModel

from worker.specs.base import Resources, SpecBase, StrictModel
from worker.specs.diagnostic import DiagnosticResult, DiagnosticSpec

SPECS: dict[str, type[SpecBase]] = {
    "diagnostic": DiagnosticSpec,
}

RESULTS: dict[str, type[BaseModel]] = {
    "diagnostic": DiagnosticResult,
}

KIND_DESCRIPTIONS: dict[str, str] = {
    "diagnostic": "The platform's self-test: a small MLP regression that logs a loss curve, "
    "checkpoints and resumes exactly. Not a research kind.",
}

__all__ = ["KIND_DESCRIPTIONS", "RESULTS", "SPECS", "Resources", "SpecBase", "StrictModel"]
