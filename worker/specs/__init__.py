"""Experiment specs and result schemas: one package per paper family (reasonformer, carma, smoe, skillmix,
diagnostic), one module per kind in it, each declaring a ``MANIFEST``; the modules at this root are helpers.

Imports pydantic only (DESIGN.md), so the backend validates specs and result records without torch.
The registry (``registry.py``) is built from the manifests by convention: adding a kind edits nothing here.
"""

from __future__ import annotations

from worker.specs.base import Resources, SpecBase, StrictModel
from worker.specs.manifest import Example, KindManifest
from worker.specs.registry import UnknownKind, manifest, manifests, result_class, spec_class

__all__ = [
    "Example",
    "KindManifest",
    "Resources",
    "SpecBase",
    "StrictModel",
    "UnknownKind",
    "manifest",
    "manifests",
    "result_class",
    "spec_class",
]
