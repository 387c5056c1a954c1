"""Login throttling: failed logins counted per account and per client address in a sliding window.

Past the limit a login answers 429 with Retry-After before any password is hashed, so a guessing run
neither gets far nor burns the API's CPU. Counts live in the API process (one process: exact; N
processes behind a balancer: up to N times the limit, still bounded). A success clears the account's
count. Argon2 verifications run at most ``slots`` at a time, off the event loop, so a login flood
cannot take every worker thread from the other routes.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable


class SlidingWindow:
    """Failure times per key within ``window`` seconds."""

    def __init__(self, limit: int, window: float, clock: Callable[[], float]) -> None:
        self.limit, self.window, self.clock = limit, window, clock
        self._hits: dict[str, deque[float]] = {}

    def _prune(self, key: str, now: float) -> deque[float]:
        hits = self._hits.get(key)
        if hits is None:
            return deque()
        while hits and hits[0] <= now - self.window:
            hits.popleft()
        if not hits:
            del self._hits[key]
        return hits

    def wait(self, key: str) -> float:
        """Seconds until ``key`` may try again (0: now)."""
        now = self.clock()
        hits = self._prune(key, now)
        return hits[0] + self.window - now if len(hits) >= self.limit else 0.0

    def hit(self, key: str) -> None:
        now = self.clock()
        self._prune(key, now)
        self._hits.setdefault(key, deque()).append(now)
        if len(self._hits) > 100_000:  # bounded memory under a flood of distinct keys
            oldest = min(self._hits, key=lambda k: self._hits[k][-1])
            del self._hits[oldest]

    def clear(self, key: str) -> None:
        self._hits.pop(key, None)


class LoginThrottle:
    def __init__(
        self,
        per_account: int = 5,
        per_address: int = 30,
        window: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lock = threading.Lock()
        self.accounts = SlidingWindow(per_account, window, clock)
        self.addresses = SlidingWindow(per_address, window, clock)

    def wait(self, account: str, address: str) -> float:
        with self._lock:
            return max(self.accounts.wait(account.lower()), self.addresses.wait(address))

    def failed(self, account: str, address: str) -> None:
        with self._lock:
            self.accounts.hit(account.lower())
            self.addresses.hit(address)

    def succeeded(self, account: str) -> None:
        with self._lock:
            self.accounts.clear(account.lower())
