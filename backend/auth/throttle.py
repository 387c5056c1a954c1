"""Login throttling that slows a guesser down without locking the account's owner out (issue 21).

Two counts, both keyed by the client address, so failures from one address never refuse a login from
another:

- **Per (account, address) pair**: the first ``free_failures`` failures cost nothing; each further one
  makes the pair wait ``backoff`` seconds, doubling with every failure, capped at ``max_backoff``
  (5 free failures, then 1, 2, 4, ... up to 900 s by default). A pair's count is forgotten once it has
  had no failure for ``max_backoff`` plus ``window`` seconds, and a correct password clears it.
- **Per address, across accounts**: ``per_address`` failures within ``window`` seconds (a password
  spray: one guess at many accounts) and that address waits until the window slides past
  them, whatever account it tries. Only that address: an owner elsewhere logs in as usual.

The old throttle counted failures per account: five wrong passwords from anyone, anywhere, and the
owner's right one was a 429 for five minutes. There is no account-wide count any more, on purpose: every
refusal here has the caller's own address in its key. What stops a guesser with many addresses is the
password policy (backend/auth/policy.py) and the pair's delays at each address.

A login waiting for its delay answers 429 with Retry-After before any password is hashed, so guessing
neither gets far nor burns the API's CPU. Counts live in the API process (one process: exact; N
processes behind a balancer: up to N times as many tries, still bounded), in maps of bounded size (the
least recently failed key is dropped first). Argon2 verifications run at most ``slots`` at a time, off
the event loop (backend/auth/routes.py), so a login flood cannot take every worker thread from the
other routes.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_KEYS = 100_000  # per map: bounded memory under a flood of distinct accounts or addresses


@dataclass
class _Pair:
    failures: int
    last: float  # the clock at the last failure


class LoginThrottle:
    def __init__(
        self,
        free_failures: int = 5,
        per_address: int = 30,
        window: float = 300.0,
        backoff: float = 1.0,
        max_backoff: float = 900.0,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = MAX_KEYS,
    ) -> None:
        self.free_failures, self.per_address, self.window = free_failures, per_address, window
        self.backoff, self.max_backoff = backoff, max_backoff
        self.clock, self.max_keys = clock, max_keys
        self._lock = threading.Lock()
        self._pairs: OrderedDict[tuple[str, str], _Pair] = OrderedDict()
        self._addresses: OrderedDict[str, deque[float]] = OrderedDict()

    def delay(self, failures: int) -> float:
        """How long a pair waits after its ``failures``-th failure (0 while the failures are free)."""
        over = failures - self.free_failures
        if over < 0:
            return 0.0
        return min(self.max_backoff, self.backoff * 2.0 ** min(over, 64))

    def wait(self, account: str, address: str) -> float:
        """Seconds until ``address`` may try ``account`` again (0: now)."""
        with self._lock:
            now = self.clock()
            return max(self._pair_wait((account.lower(), address), now), self._address_wait(address, now))

    def failed(self, account: str, address: str) -> None:
        with self._lock:
            now = self.clock()
            key = (account.lower(), address)
            pair = self._pairs.pop(key, None)
            if pair is None or self._forgotten(pair, now):
                pair = _Pair(0, now)
            pair.failures += 1
            pair.last = now
            self._pairs[key] = pair  # the most recent failure last: the oldest are dropped first
            _bound(self._pairs, self.max_keys)
            hits = self._address_hits(address, now)
            hits.append(now)
            self._addresses.pop(address, None)
            self._addresses[address] = hits
            _bound(self._addresses, self.max_keys)

    def succeeded(self, account: str, address: str) -> None:
        """A correct password clears that pair's count (not the address's: a guesser's own valid account
        must not reset its count of failures at other accounts)."""
        with self._lock:
            self._pairs.pop((account.lower(), address), None)

    def failures(self, account: str, address: str) -> int:
        """The failures counted for the pair (what the operator, and the tests, can ask)."""
        with self._lock:
            pair = self._pairs.get((account.lower(), address))
            return 0 if pair is None or self._forgotten(pair, self.clock()) else pair.failures

    def _forgotten(self, pair: _Pair, now: float) -> bool:
        return now - pair.last > self.max_backoff + self.window

    def _pair_wait(self, key: tuple[str, str], now: float) -> float:
        pair = self._pairs.get(key)
        if pair is None:
            return 0.0
        if self._forgotten(pair, now):
            del self._pairs[key]
            return 0.0
        return max(0.0, pair.last + self.delay(pair.failures) - now)

    def _address_hits(self, address: str, now: float) -> deque[float]:
        hits = self._addresses.get(address)
        if hits is None:
            return deque()
        while hits and hits[0] <= now - self.window:
            hits.popleft()
        if not hits:
            del self._addresses[address]
        return hits

    def _address_wait(self, address: str, now: float) -> float:
        hits = self._address_hits(address, now)
        if len(hits) < self.per_address:
            return 0.0
        # the window must slide past enough failures to bring the count under the limit
        return hits[len(hits) - self.per_address] + self.window - now


def _bound(entries: OrderedDict[Any, Any], limit: int) -> None:
    while len(entries) > limit:
        entries.popitem(last=False)
