"""Lint helpers that are not part of the product: the custom import-linter contract types
(``lint.importlinter_contracts``, ``lint.importlinter_families``), loaded by ``lint-imports`` run from the
repository root, the drawing of backend/ as layers (``lint/backend_layers.py``), the writer of
docs/architecture.md's generated parts, and the count of the tests' checks."""
