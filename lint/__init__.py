"""Lint helpers that are not part of the product: the custom import-linter contract types
(``lint.importlinter_contracts``, loaded by ``lint-imports`` run from the repository root) and the drawing
of backend/ as layers (``lint/backend_layers.py``)."""
