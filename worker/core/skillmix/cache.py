"""An on-disk cache of generations and gradings keyed by (model, ept, prompt, seed) and the sampling
settings, so a resumed or repeated sweep never pays for a reply twice. One JSON file per reply under
``<root>/<first two hex digits>/<sha256>.json``, written atomically (a crash leaves no half file); two
workers writing the same key write the same content. Failed replies are not cached: a later run retries
them."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def cache_key(**parts: Any) -> str:
    """The sha256 of the parts as canonical JSON (every part that changes a reply belongs in the key)."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


@dataclass
class ReplyCache:
    root: Path | None  # None: caching off (every lookup misses, nothing is written)
    hits: int = 0
    misses: int = 0
    _memory: dict[str, str] = field(default_factory=dict)

    def _path(self, key: str) -> Path:
        assert self.root is not None
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        value = self._memory.get(key)
        if value is None and self.root is not None:
            try:
                value = json.loads(self._path(key).read_text(encoding="utf-8"))["reply"]
            except (OSError, ValueError, KeyError, TypeError):
                value = None
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
        return value

    def put(self, key: str, reply: str, **meta: Any) -> None:
        self._memory[key] = reply
        if self.root is None:
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"reply": reply, **meta}, handle, ensure_ascii=False)
        os.replace(tmp, path)
