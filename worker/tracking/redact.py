"""Secret values a run was handed, replaced wherever the run records text (logs, params, results, its
error): a key printed by a library's debug line or echoed in an exception never reaches the platform."""

from __future__ import annotations

import threading
from typing import Any

MASK = "[secret]"
MIN_LENGTH = 4  # shorter values would mask ordinary text; keys are far longer


class Redactor:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: tuple[str, ...] = ()

    def add(self, value: str) -> None:
        if len(value) < MIN_LENGTH:
            return
        with self._lock:
            # longest first: a value that contains another is masked whole
            self._values = tuple(sorted({*self._values, value}, key=len, reverse=True))

    def text(self, text: str) -> str:
        for value in self._values:
            if value in text:
                text = text.replace(value, MASK)
        return text

    def value(self, value: Any) -> Any:
        """``value`` with every string in it (keys of dicts too) redacted."""
        if not self._values:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value
