"""Experiment specs and result schemas, one module per kind. Imports pydantic only (DESIGN.md).

``SPECS`` maps a kind's name to its spec class; ``RESULTS`` maps a result record's kind to its schema.
The backend validates submitted specs and posted results against these without importing torch.
"""

from __future__ import annotations

from pydantic import BaseModel

from worker.specs.base import Resources, SpecBase, StrictModel
from worker.specs.diagnostic import DiagnosticResult, DiagnosticSpec
from worker.specs.smoe_sraven import SmoeSravenSpec, SravenCell

SPECS: dict[str, type[SpecBase]] = {
    "diagnostic": DiagnosticSpec,
    "smoe_sraven": SmoeSravenSpec,
}

RESULTS: dict[str, type[BaseModel]] = {
    "diagnostic": DiagnosticResult,
    "sraven_cell": SravenCell,
}

KIND_DESCRIPTIONS: dict[str, str] = {
    "diagnostic": "The platform's self-test: a small MLP regression that logs a loss curve, "
    "checkpoints and resumes exactly. Not a research kind.",
    "smoe_sraven": "A transformer with a sparse mixture-of-experts FFN (top-k of E experts) trained on "
    "SRAVEN; ID-test and OOD accuracy by M (rules per panel), top-k and attention (SMoE paper, section 2.1).",
}

__all__ = ["KIND_DESCRIPTIONS", "RESULTS", "SPECS", "Resources", "SpecBase", "StrictModel"]
