"""The buffered writer between a RunContext and one sink: records wait in order in a buffer that a
background thread drains (batched, retried with backoff while the sink is down, never dropped).

``Sink`` is the interface every sink implements (worker.tracking.sinks: the API and local files;
worker.tracking.mlflow: the MLflow mirror).
"""

from __future__ import annotations

import abc
import logging
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from common.runs import FinalStatus

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class MetricPoint:
    key: str
    step: int
    value: float
    time: float  # seconds since the epoch, when the kind logged it


@dataclass(frozen=True, slots=True)
class ExampleRow:
    idx: int  # the row's place in its table, in logging order
    key: str
    data: dict[str, Any]


class Sink(abc.ABC):
    """Where a context's records go. Methods run on the sink's writer thread, one call at a time.

    A ``required`` sink (the API, local files) must receive everything: its failures are retried and,
    when permanent, fail the run. A mirror (MLflow) is best effort: its failures are logged.
    """

    name: str = "sink"
    required: bool = True
    #: how long close() keeps retrying this sink before giving up (None: forever)
    flush_deadline: float | None = None

    @abc.abstractmethod
    def write_params(self, params: dict[str, Any]) -> None: ...

    @abc.abstractmethod
    def write_metrics(self, points: Sequence[MetricPoint]) -> None: ...

    @abc.abstractmethod
    def write_result(self, kind: str, payload: dict[str, Any]) -> None: ...

    @abc.abstractmethod
    def write_logs(self, lines: Sequence[str]) -> None: ...

    def write_examples(self, table: str, rows: Sequence[ExampleRow]) -> None:  # noqa: B027 - optional
        """Rows of a per-example table (a mirror without such tables keeps none: MLflow)."""

    def finish(self, status: FinalStatus) -> None:  # noqa: B027 - optional
        """The run ended with ``status`` (after every record was written)."""

    def is_transient(self, exc: BaseException) -> bool:
        """Whether retrying ``exc`` can help; a permanent error drops the record and is reported."""
        return True


@dataclass(frozen=True)
class WriterOptions:
    flush_interval: float = 1.0  # seconds a point may wait in the buffer
    flush_at: int = 1_000  # a buffer this full is flushed at once
    max_batch: int = 10_000  # the API's metric batch limit (docs/api.md)
    max_log_batch: int = 1_000
    backoff_initial: float = 0.2
    backoff_max: float = 5.0


_Op = tuple[Literal["params", "result", "examples"], Any]


class SinkWriter:
    """A buffer in front of one sink, drained by a background thread.

    Records wait in order; the head record is removed only after the sink accepted it, so a failing
    sink is retried with exponential backoff (``backoff_initial`` doubling to ``backoff_max``) and no
    point is ever dropped. Only a permanent error (``sink.is_transient`` false) drops the record, and
    it is kept in ``errors`` for the context to report.
    """

    def __init__(self, sink: Sink, options: WriterOptions | None = None) -> None:
        self.sink = sink
        self.options = options or WriterOptions()
        self.errors: list[BaseException] = []
        self._cond = threading.Condition()
        self._ops: deque[_Op] = deque()
        self._metrics: list[MetricPoint] = []
        self._logs: list[str] = []
        self._pending_since: float | None = None  # when the oldest buffered point or line arrived
        self._flush_waiters = 0
        self._closing = False
        self._abort = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"reasonlab-sink-{sink.name}", daemon=True)
        self._thread.start()

    # -- producers (the kind's thread) ------------------------------------------------------------------

    def add_metrics(self, points: Sequence[MetricPoint]) -> None:
        with self._cond:
            self._mark_pending()
            self._metrics.extend(points)
            if len(self._metrics) >= self.options.flush_at:
                self._cond.notify_all()

    def add_logs(self, lines: Sequence[str]) -> None:
        with self._cond:
            self._mark_pending()
            self._logs.extend(lines)

    def _mark_pending(self) -> None:
        """Start the buffer's clock when it stops being empty (and wake the thread to time it)."""
        if self._pending_since is None:
            self._pending_since = time.monotonic()
            self._cond.notify_all()

    def add_op(self, op: _Op) -> None:
        with self._cond:
            self._ops.append(op)
            self._cond.notify_all()

    @property
    def pending(self) -> int:
        with self._cond:
            return len(self._ops) + len(self._metrics) + len(self._logs)

    def flush(self, timeout: float | None = None) -> bool:
        """Block until everything buffered so far was written (or dropped as permanent); False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._flush_waiters += 1
            self._cond.notify_all()
            try:
                while self._ops or self._metrics or self._logs:
                    if not self._thread.is_alive():
                        return False
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        return False
                    self._cond.wait(timeout=remaining if remaining is not None else 1.0)
                return True
            finally:
                self._flush_waiters -= 1

    def close(self, timeout: float | None = None) -> bool:
        """Flush (retrying up to ``timeout``), then stop the thread. False if records were left unwritten."""
        flushed = self.flush(timeout)
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._abort.set()
        self._thread.join(timeout=10.0)
        return flushed

    # -- the writer thread ------------------------------------------------------------------------------

    def _due(self) -> bool:
        if self._ops:
            return True
        if not (self._metrics or self._logs):
            return False
        if self._flush_waiters or self._closing or len(self._metrics) >= self.options.flush_at:
            return True
        return self._age() >= self.options.flush_interval

    def _age(self) -> float:
        return 0.0 if self._pending_since is None else time.monotonic() - self._pending_since

    def _loop(self) -> None:
        backoff = self.options.backoff_initial
        while True:
            with self._cond:
                while not self._due():
                    if self._closing:
                        return
                    buffered = bool(self._metrics or self._logs)
                    wait = max(self.options.flush_interval - self._age(), 0.01) if buffered else None
                    self._cond.wait(timeout=wait)
                # peek at the head record; producers only append, so it stays the head until removed
                item: Any
                if self._ops:
                    what, item = "op", self._ops[0]
                elif self._metrics:
                    what, item = "metrics", self._metrics[: self.options.max_batch]
                else:
                    what, item = "logs", self._logs[: self.options.max_log_batch]
            try:
                self._write(what, item)
            except Exception as exc:
                if self.sink.is_transient(exc) and not self._abort.is_set():
                    logger.warning(
                        "sink %s: %s failed (%s: %s); retrying in %.1f s",
                        self.sink.name,
                        what,
                        type(exc).__name__,
                        exc,
                        backoff,
                    )
                    self._abort.wait(backoff)
                    backoff = min(backoff * 2, self.options.backoff_max)
                    continue
                if self.sink.is_transient(exc):  # aborted while the sink is down: leave it pending
                    return
                logger.error("sink %s: %s rejected, not retried: %s", self.sink.name, what, exc)
                self.errors.append(exc)
            backoff = self.options.backoff_initial
            with self._cond:
                if what == "op":
                    self._ops.popleft()
                elif what == "metrics":
                    del self._metrics[: len(item)]
                else:
                    del self._logs[: len(item)]
                if not (self._metrics or self._logs):
                    self._pending_since = None
                self._cond.notify_all()

    def _write(self, what: str, item: Any) -> None:
        if what == "metrics":
            self.sink.write_metrics(item)
        elif what == "logs":
            self.sink.write_logs(item)
        else:
            op, value = item
            if op == "params":
                self.sink.write_params(value)
            elif op == "examples":
                self.sink.write_examples(*value)
            else:
                kind, payload = value
                self.sink.write_result(kind, payload)
