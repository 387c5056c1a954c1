"""Reading a spec file, shared by ``reasonlab submit`` (cli.client) and ``reasonlab run`` (cli.local)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import yaml


def load_yaml(path: str, what: str) -> Any:
    p = Path(path)
    if not p.is_file():
        raise click.ClickException(f"{what} {path!r} does not exist")
    try:
        return yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as exc:
        raise click.ClickException(f"{what} {path!r} is not valid YAML: {exc}") from exc


def experiment_file(path: str, name: str | None, kind: str | None) -> dict[str, Any]:
    """A spec file is either {name, kind, spec, sweep?, project?} or a bare spec with a ``kind``."""
    doc = load_yaml(path, "spec file")
    if not isinstance(doc, dict):
        raise click.ClickException(f"spec file {path!r} must hold a mapping")
    if "spec" not in doc:
        doc = {"spec": {k: v for k, v in doc.items() if k != "kind"}, "kind": doc.get("kind")}
    doc["kind"] = kind or doc.get("kind")
    if not doc["kind"]:
        raise click.ClickException(f"spec file {path!r} names no kind: add 'kind:' or pass --kind")
    doc["name"] = name or doc.get("name") or Path(path).stem
    return doc
