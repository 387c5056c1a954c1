"""What the backend reads in a validated spec's dump: the value at a dotted path, and the runs it names.

A floor below the domains: authorization (a run's token may read the runs its spec starts from) and the
experiments' submission check (those runs exist and are usable) both read a spec this way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from worker.specs import manifest


def field_value(spec: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path of a validated spec's dump, or None where the path is absent."""
    value: Any = spec
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def source_run_ids(kind: str, spec: Mapping[str, Any]) -> list[int]:
    """The runs a ``kind`` spec names as its sources (``KindManifest.source_runs``); none for an unknown
    kind."""
    try:
        paths = manifest(kind).source_runs
    except KeyError:
        return []
    return [v for v in (field_value(spec, p) for p in paths) if isinstance(v, int)]
