"""A run's seed group: every spec field except ``seed``.

``group_key(spec)`` is the sha256 hex of the spec's canonical JSON (keys sorted, no spaces, lists kept in
order) with every key named ``seed`` removed at any depth: the runs of one configuration over several
seeds share it. Set when a run is created (backend/experiments/service.py) and backfilled by migration
0018 (which keeps a frozen copy of these two functions: a test checks they agree).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def without_seed(value: Any) -> Any:
    """``value`` with every dict key named ``seed`` removed, at any depth (lists kept in order)."""
    if isinstance(value, dict):
        return {k: without_seed(v) for k, v in value.items() if k != "seed"}
    if isinstance(value, list):
        return [without_seed(v) for v in value]
    return value


def group_key(spec: dict[str, Any]) -> str:
    text = json.dumps(without_seed(spec), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()
