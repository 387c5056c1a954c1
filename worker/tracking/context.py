"""The RunContext contract: everything an experiment kind may use while it runs (DESIGN.md, Contracts).

This is the light module kinds import: the standard library, pydantic and ``worker.specs`` only (no
torch, httpx or mlflow; an import-linter contract checks it). The concrete contexts are in
``worker.tracking.tracked``: kinds run unchanged under the platform (API sink + MLflow mirror), under
``reasonlab run spec.yaml`` (local files + MLflow) and in tests (local files only). ``RunError``, the
failure a kind explains, is declared with the specs (``worker.specs.errors``): a spec value the
confinement rules refuse at run time is one.
"""

from __future__ import annotations

import abc
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from worker.specs import UnknownKind, result_class
from worker.specs.errors import RunError  # kinds import it from here, with the RunContext


class RunContext(abc.ABC):
    seed: int
    device: str
    out_dir: Path

    @abc.abstractmethod
    def log_params(self, params: dict[str, Any]) -> None:
        """Record flat or nested parameters of the run (mirrored to MLflow)."""

    @abc.abstractmethod
    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        """Buffer metric points at ``step``; flushed in the background. Re-logging a step overwrites it."""

    @abc.abstractmethod
    def log_result(self, record: Any) -> None:
        """Post a typed result record (a pydantic model from worker.specs, or a dict with a ``kind``)."""

    @abc.abstractmethod
    def log_examples(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        """Add rows to the run's per-example table ``table`` (a grading, a prediction per example): each
        row a JSON-able dict with a ``key``, the example's stable id (unique in the table; diffs of two
        runs match rows on it). Rows are numbered in logging order, buffered and sent in batches; a
        resumed run (a new attempt) replaces the earlier attempt's rows of the table, in any order."""

    @abc.abstractmethod
    def progress(self, done: int, total: int, message: str = "") -> None:
        """Report progress; the dashboard shows a bar and an ETA."""

    @abc.abstractmethod
    def should_stop(self) -> bool:
        """True once a cancel was requested: the kind should return promptly (after a checkpoint)."""

    @abc.abstractmethod
    def save_checkpoint(self, state: dict[str, Any], step: int) -> None:
        """Persist ``state`` (torch-serialisable) for resume; flushes metrics logged so far first."""

    @abc.abstractmethod
    def load_checkpoint(self) -> tuple[dict[str, Any], int] | None:
        """The latest checkpoint ``(state, step)`` of this run (any attempt), or None."""

    def log(self, line: str) -> None:  # noqa: B027 - optional sink
        """A free-text log line (shown by ``reasonlab runs logs`` and the run page)."""

    def secret(self, name: str) -> str:
        """The project secret ``name`` that the spec names in a ``*_secret`` field (an endpoint's key).
        The platform hands it to this run only and redacts it from the run's logs, params and results;
        ``reasonlab run`` reads ``REASONLAB_SECRET_<NAME>`` from its environment."""
        raise RunError(f"secret {name!r}: this context has no project secrets")

    def secret_hosts(self, name: str) -> tuple[str, ...] | None:
        """Where the secret ``name`` may be sent, as its project admin set it (entries of
        ``worker.specs.confine.secret_hosts``), for a secret ``secret`` returned; the code that sends it
        checks every call against them before it connects. None: no bound (a local run's own
        environment: ``reasonlab run`` reads ``REASONLAB_SECRET_<NAME>_HOSTS``, comma-separated, if set)."""
        return None

    def run_outputs(self, run_id: int) -> Path | None:
        """The output folder (``out_dir``) of another run of this platform, e.g. the model a source run
        saved; None where this context cannot see other runs (a local run names a folder instead). The
        backend checked at submission that the run exists, is of the declared kind and succeeded
        (``KindManifest.source_runs``)."""
        return None


def result_record(record: Any) -> tuple[str, dict[str, Any]]:
    """``(kind, payload)`` of a result record, validated against its declared type when known."""
    if isinstance(record, BaseModel):
        payload = record.model_dump(mode="json")
    elif isinstance(record, dict):
        payload = dict(record)
    else:
        raise TypeError(f"a result record is a pydantic model or a dict with a 'kind', not {type(record)}")
    kind = payload.get("kind")
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"a result record needs a 'kind': {payload!r:.200}")
    try:
        schema = result_class(kind)
    except UnknownKind:
        return kind, payload  # the API refuses it with the list of known result kinds
    # fail in the kind, at the line that logged it, not later in the sink
    payload = schema.model_validate(payload).model_dump(mode="json")
    return kind, payload


# a per-example table's name (backend/examples/schemas.py: TABLE_PATTERN)
TABLE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_EXAMPLE_BYTES = 64 * 1024  # one row as JSON (the API's limit)


def example_rows(table: str, rows: Sequence[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """``[(key, data)]`` of rows for ``log_examples`` (``data``: the row without its key, as JSON sees
    it), checked where the kind logs them: a bad table name, a row without a key or over 64 KiB."""
    if not isinstance(table, str) or not TABLE_NAME.match(table):
        raise ValueError(f"an example table's name is 1-64 letters, digits, '_', '.', '-': {table!r}")
    checked: list[tuple[str, dict[str, Any]]] = []
    for row in rows:
        if not isinstance(row, dict):
            raise TypeError(f"an example row is a dict, not {type(row)}")
        key = row.get("key")
        if not isinstance(key, str) or not 1 <= len(key) <= 200:
            raise ValueError(f"an example row needs a 'key' of 1-200 characters: {row!r:.200}")
        text = json.dumps({k: v for k, v in row.items() if k != "key"}, default=str)
        if len(text) > MAX_EXAMPLE_BYTES:
            raise ValueError(
                f"example {key!r} of table {table!r} is {len(text):,} bytes as JSON; at most 65,536"
            )
        checked.append((key, json.loads(text)))
    return checked
