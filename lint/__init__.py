"""Lint helpers that are not part of the product: the custom import-linter contract type
(``lint.importlinter_contracts``), loaded by ``lint-imports`` run from the repository root."""
