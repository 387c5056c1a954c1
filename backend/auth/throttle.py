"""Login throttling that slows a guesser down without locking the account's owner out.

Three counts. The first two are keyed by the client address, so failures from one address never refuse
a login from another; the third never refuses an address the account has logged in from:

- **Per (account, address) pair**: the first ``free_failures`` failures cost nothing; each further one
  makes the pair wait ``backoff`` seconds, doubling with every failure, capped at ``max_backoff``
  (5 free failures, then 1, 2, 4, ... up to 900 s by default). A pair's count is forgotten once it has
  had no failure for ``max_backoff`` plus ``window`` seconds, and a correct password clears it.
- **Per address, across accounts**: ``per_address`` failures within ``window`` seconds (a password
  spray: one guess at many accounts) and that address waits until the window slides past
  them, whatever account it tries. Only that address: an owner elsewhere logs in as usual.
- **Per account, across addresses**: failures at one account from addresses it has never logged in from
  (many addresses, each within its pair's free failures) past ``account_free`` slow every such address
  at once: ``backoff`` seconds, doubling, capped at ``account_max_backoff`` (20 free, then up to 120 s by
  default), counted as a pair is and forgotten as a pair is. A slowdown, never a lockout: the cap is
  short, and an address the account has logged in from (a correct password, remembered for
  ``known_for`` seconds) is not slowed by it at all, so the owner from their own address gets in at once.

The old throttle counted failures per account from every address, the owner's included: five wrong
passwords from anyone, anywhere, and the owner's right one was a 429 for five minutes. Here no refusal
has the owner's known address in its key, and an owner on a new address waits at most
``account_max_backoff``.

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
KNOWN_FOR = 30 * 86400.0  # seconds an address an account logged in from stays known


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
        account_free: int = 20,
        account_max_backoff: float = 120.0,
        known_for: float = KNOWN_FOR,
    ) -> None:
        self.free_failures, self.per_address, self.window = free_failures, per_address, window
        self.backoff, self.max_backoff = backoff, max_backoff
        self.account_free, self.account_max_backoff, self.known_for = (
            account_free,
            account_max_backoff,
            known_for,
        )
        self.clock, self.max_keys = clock, max_keys
        self._lock = threading.Lock()
        self._pairs: OrderedDict[tuple[str, str], _Pair] = OrderedDict()
        self._addresses: OrderedDict[str, deque[float]] = OrderedDict()
        self._accounts: OrderedDict[str, _Pair] = OrderedDict()  # failures from unknown addresses
        self._known: OrderedDict[tuple[str, str], float] = OrderedDict()  # the clock at the last success

    def delay(self, failures: int) -> float:
        """How long a pair waits after its ``failures``-th failure (0 while the failures are free)."""
        return _delay(failures, self.free_failures, self.backoff, self.max_backoff)

    def account_delay(self, failures: int) -> float:
        """How long unknown addresses wait at an account after its ``failures``-th failure from them."""
        return _delay(failures, self.account_free, self.backoff, self.account_max_backoff)

    def wait(self, account: str, address: str) -> float:
        """Seconds until ``address`` may try ``account`` again (0: now)."""
        with self._lock:
            now = self.clock()
            account = account.lower()
            waits = [self._pair_wait((account, address), now), self._address_wait(address, now)]
            if not self._is_known(account, address, now):
                waits.append(self._account_wait(account, now))
            return max(waits)

    def failed(self, account: str, address: str) -> None:
        with self._lock:
            now = self.clock()
            key = (account.lower(), address)
            self._count(self._pairs, key, now)
            if not self._is_known(key[0], address, now):
                self._count(self._accounts, key[0], now)
            hits = self._address_hits(address, now)
            hits.append(now)
            self._addresses.pop(address, None)
            self._addresses[address] = hits
            _bound(self._addresses, self.max_keys)

    def succeeded(self, account: str, address: str) -> None:
        """A correct password clears that pair's count (not the address's: a guesser's own valid account
        must not reset its count of failures at other accounts; nor the account's: the guessers elsewhere
        are still guessing) and makes the address known to the account."""
        with self._lock:
            key = (account.lower(), address)
            self._pairs.pop(key, None)
            self._known.pop(key, None)
            self._known[key] = self.clock()
            _bound(self._known, self.max_keys)

    def failures(self, account: str, address: str) -> int:
        """The failures counted for the pair (what the operator, and the tests, can ask)."""
        with self._lock:
            pair = self._pairs.get((account.lower(), address))
            return 0 if pair is None or self._forgotten(pair, self.clock()) else pair.failures

    def account_failures(self, account: str) -> int:
        """The failures counted at ``account`` from addresses it has not logged in from."""
        with self._lock:
            entry = self._accounts.get(account.lower())
            return 0 if entry is None or self._forgotten(entry, self.clock()) else entry.failures

    def _count(self, entries: OrderedDict[Any, _Pair], key: Any, now: float) -> None:
        entry = entries.pop(key, None)
        if entry is None or self._forgotten(entry, now):
            entry = _Pair(0, now)
        entry.failures += 1
        entry.last = now
        entries[key] = entry  # the most recent failure last: the oldest are dropped first
        _bound(entries, self.max_keys)

    def _is_known(self, account: str, address: str, now: float) -> bool:
        since = self._known.get((account, address))
        return since is not None and now - since <= self.known_for

    def _account_wait(self, account: str, now: float) -> float:
        entry = self._accounts.get(account)
        if entry is None:
            return 0.0
        if self._forgotten(entry, now):
            del self._accounts[account]
            return 0.0
        return max(0.0, entry.last + self.account_delay(entry.failures) - now)

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


def _delay(failures: int, free: int, backoff: float, cap: float) -> float:
    over = failures - free
    if over < 0:
        return 0.0
    return min(cap, backoff * 2.0 ** min(over, 64))


def _bound(entries: OrderedDict[Any, Any], limit: int) -> None:
    while len(entries) > limit:
        entries.popitem(last=False)
