"""Python logging during a run -> the run's log lines (``POST /runs/{id}/logs``, through the context)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from worker.tracking.tracked import ApiRunContext


class _RunLogHandler(logging.Handler):
    """Python logging during the run -> the run's log lines (``POST /runs/{id}/logs``, batched by the
    context's writer). Records of the tracking threads and HTTP libraries are skipped: logging them
    would post logs about posting logs."""

    _SKIP_LOGGERS = ("httpx", "httpcore", "urllib3", "mlflow", "alembic", "worker.tracking")

    def __init__(self, ctx: ApiRunContext) -> None:
        super().__init__(logging.INFO)
        self.ctx = ctx
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith(self._SKIP_LOGGERS) or (record.threadName or "").startswith("reasonlab-"):
            return
        try:
            self.ctx.log(self.format(record))
        except Exception:
            self.handleError(record)


@contextmanager
def capture_logs(ctx: ApiRunContext) -> Iterator[None]:
    """The scope the executor runs a kind in: Python logging goes to the run's log lines, and the data
    paths ``dataset:<name>`` of its spec are fetched through the run's context (``worker.runtime.confined``)."""
    from worker.runtime.confined import datasets_from

    with datasets_from(ctx.fetch_dataset):
        yield from _capture(ctx)


def _capture(ctx: ApiRunContext) -> Iterator[None]:
    handler = _RunLogHandler(ctx)
    root = logging.getLogger()
    worker_logger = logging.getLogger("worker")
    old_level = worker_logger.level
    if worker_logger.getEffectiveLevel() > logging.INFO:  # Celery sets the root to WARNING by default
        worker_logger.setLevel(logging.INFO)
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
        worker_logger.setLevel(old_level)
