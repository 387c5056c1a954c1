"""RunContext: everything an experiment kind may use while it runs (DESIGN.md, Contracts).

Kinds run unchanged under the platform (API sink + MLflow mirror), under ``reasonlab run spec.yaml``
(local files + MLflow) and in tests (local files only).
"""

from __future__ import annotations

import abc
import contextlib
import json
import logging
import math
import os
import re
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import torch
from pydantic import BaseModel

from worker.client import ApiError, ApiUnavailable, ReasonLabClient
from worker.specs import UnknownKind, result_class

logger = logging.getLogger(__name__)


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


# ---------------------------------------------------------------------------------------------------------
# Concrete tracking: sinks, the buffered writer that feeds them, checkpoints, and the two contexts.
# ---------------------------------------------------------------------------------------------------------

RunStatus = Literal["succeeded", "failed", "cancelled"]


@dataclass(frozen=True, slots=True)
class MetricPoint:
    key: str
    step: int
    value: float
    time: float  # seconds since the epoch, when the kind logged it


class TrackingError(RuntimeError):
    """A required sink could not persist what the run logged (rejected, or unreachable past a deadline)."""


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

    def finish(self, status: RunStatus) -> None:  # noqa: B027 - optional
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


_Op = tuple[Literal["params", "result"], Any]


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
            else:
                kind, payload = value
                self.sink.write_result(kind, payload)


# -- checkpoints ----------------------------------------------------------------------------------------

_CHECKPOINT_RE = re.compile(r"^step-(\d+)\.pt$")


def _checkpoints(directory: Path) -> list[tuple[int, Path]]:
    """``(step, path)`` of every complete checkpoint in ``directory``, oldest first."""
    if not directory.is_dir():
        return []
    found = []
    for path in directory.iterdir():
        match = _CHECKPOINT_RE.match(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def save_checkpoint_file(directory: Path, state: dict[str, Any], step: int, keep: int = 2) -> Path:
    """Write ``state`` to ``directory/step-<step>.pt`` atomically and keep the newest ``keep``.

    torch.save goes to a temporary file in the same folder, which is fsynced and renamed over the final
    name (os.replace is atomic on POSIX), so a crash mid-write never leaves a truncated checkpoint.
    """
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"step-{step}.pt"
    fd, tmp_name = tempfile.mkstemp(prefix=f".step-{step}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            torch.save(state, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_name, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    with contextlib.suppress(OSError):  # persist the rename itself
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    for _, old in _checkpoints(directory)[:-keep]:
        with contextlib.suppress(FileNotFoundError):
            old.unlink()
    return final


def load_checkpoint_file(directory: Path) -> tuple[dict[str, Any], int] | None:
    """The newest readable checkpoint ``(state, step)`` in ``directory``, or None."""
    for step, path in reversed(_checkpoints(directory)):
        try:
            # Checkpoints are written by this worker under the platform's artifact root (trusted like the
            # code itself), and kinds may store any picklable state (RNG states, numpy arrays).
            state = torch.load(path, map_location="cpu", weights_only=False)
        except Exception as exc:
            logger.warning("checkpoint %s is unreadable (%s); trying an older one", path, exc)
            continue
        return state, step
    return None


# -- helpers --------------------------------------------------------------------------------------------


def resolve_device(requested: str) -> str:
    """``auto`` -> ``cuda`` when this process sees a GPU, else ``cpu``; ``cuda`` without one is an error."""
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"the spec asks for device {requested!r} but this worker has no CUDA device")
    return requested


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


def flatten_params(params: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"train": {"lr": 0.1}}`` -> ``{"train.lr": 0.1}`` (lists stay values)."""
    flat: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten_params(value, prefix=f"{name}."))
        else:
            flat[name] = value
    return flat


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=UTC).isoformat().replace("+00:00", "Z")


# -- sinks ----------------------------------------------------------------------------------------------


class LocalSink(Sink):
    """Files under ``out_dir``: metrics.jsonl, results.jsonl, params.json, logs.txt, status.json."""

    name = "local"
    required = True
    flush_deadline = 60.0

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)

    def _append(self, name: str, text: str) -> None:
        with open(self.out_dir / name, "a", encoding="utf-8") as fh:
            fh.write(text)

    def _write_json(self, name: str, value: Any) -> None:
        tmp = self.out_dir / f".{name}.tmp"
        tmp.write_text(json.dumps(value, indent=2, sort_keys=True, default=str), encoding="utf-8")
        os.replace(tmp, self.out_dir / name)

    def write_params(self, params: dict[str, Any]) -> None:
        path = self.out_dir / "params.json"
        merged = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        merged.update(params)
        self._write_json("params.json", merged)

    def write_metrics(self, points: Sequence[MetricPoint]) -> None:
        self._append(
            "metrics.jsonl",
            "".join(
                json.dumps({"key": p.key, "step": p.step, "value": p.value, "time": p.time}) + "\n"
                for p in points
            ),
        )

    def write_result(self, kind: str, payload: dict[str, Any]) -> None:
        self._append("results.jsonl", json.dumps({"kind": kind, "payload": payload}) + "\n")

    def write_logs(self, lines: Sequence[str]) -> None:
        self._append("logs.txt", "".join(line.rstrip("\n") + "\n" for line in lines))

    def finish(self, status: RunStatus) -> None:
        self._write_json("status.json", {"status": status, "finished_at": _iso(time.time())})


class ApiSink(Sink):
    """The platform database, through the REST API (idempotent metric posts: re-sends overwrite)."""

    name = "api"
    required = True
    flush_deadline = 3600.0  # an API outage of up to an hour loses nothing

    def __init__(self, client: ReasonLabClient, run_id: int, attempt: int | None = None) -> None:
        self.client = client
        self.run_id = run_id
        self.attempt = attempt  # every write names it: the API refuses a stale attempt's writes (409)
        self._result_counts: dict[str, int] = {}
        self._pending_keys: dict[int, str] = {}

    def write_params(self, params: dict[str, Any]) -> None:
        """The spec is the run's parameters on the platform; nothing to send."""

    def write_metrics(self, points: Sequence[MetricPoint]) -> None:
        self.client.post_metrics(
            self.run_id,
            # JSON has no NaN or inf: a non-finite value is sent as null, which the API stores as a gap
            [
                {"key": p.key, "step": p.step, "value": _finite_or_none(p.value), "time": _iso(p.time)}
                for p in points
            ],
            attempt=self.attempt,
        )

    def write_result(self, kind: str, payload: dict[str, Any]) -> None:
        # The key is the record's place among the run's records of its kind: a retried post, or the same
        # record posted again by a resumed attempt (runs resume deterministically), replaces its copy.
        # (A retry of a failed post hands us the same payload object again: it keeps its key.)
        key = self._pending_keys.get(id(payload))
        if key is None:
            n = self._result_counts.get(kind, 0)
            key = self._pending_keys[id(payload)] = f"{kind}:{n}"
            self._result_counts[kind] = n + 1
        self.client.post_results(self.run_id, kind, _json_safe(payload), key=key, attempt=self.attempt)
        del self._pending_keys[id(payload)]

    def write_logs(self, lines: Sequence[str]) -> None:
        self.client.post_logs(self.run_id, lines, attempt=self.attempt)

    def is_transient(self, exc: BaseException) -> bool:
        # ValueError/TypeError: a record that cannot be encoded will never go through: permanent
        if isinstance(exc, ValueError | TypeError):
            return False
        return isinstance(exc, ApiUnavailable) or not isinstance(exc, ApiError)


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _json_safe(value: Any) -> Any:
    """A payload with every non-finite float replaced by None (JSON cannot carry NaN or inf)."""
    if isinstance(value, float):
        return _finite_or_none(value)
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


_MLFLOW_STATUS = {"succeeded": "FINISHED", "failed": "FAILED", "cancelled": "KILLED"}
_MLFLOW_KEY_RE = re.compile(r"[^A-Za-z0-9_\-. /]")


def mlflow_artifact_location(tracking_uri: str, fallback: Path) -> str | None:
    """Where a new MLflow experiment keeps artifacts: the server decides for an http(s) store; for a file
    or database store a folder beside it (MLflow's default, ./mlruns, depends on the working directory)."""
    if tracking_uri.startswith(("http://", "https://", "databricks")):
        return None
    if tracking_uri.startswith("sqlite:///"):
        return (Path(tracking_uri.removeprefix("sqlite:///")).parent / "mlartifacts").resolve().as_uri()
    return fallback.resolve().as_uri()


class MlflowSink(Sink):
    """The MLflow mirror of a run: params (flattened), metrics (log_batch), results (JSON artifacts) and
    the final status. Best effort: an MLflow outage never fails or blocks the run for long."""

    name = "mlflow"
    required = False
    flush_deadline = 120.0

    def __init__(self, client: Any, run_id: str) -> None:
        self.client = client  # mlflow.MlflowClient
        self.run_id = run_id
        self._result_counts: dict[str, int] = {}

    @classmethod
    def start(
        cls,
        tracking_uri: str,
        experiment_name: str,
        run_name: str,
        *,
        tags: dict[str, str] | None = None,
        artifact_location: str | None = None,
        existing_run_id: str | None = None,
    ) -> MlflowSink:
        """Create the MLflow run (and its experiment), or reopen ``existing_run_id`` (a later attempt)."""
        from mlflow import MlflowClient
        from mlflow.exceptions import MlflowException

        client = MlflowClient(tracking_uri=tracking_uri)
        if existing_run_id:
            try:
                client.get_run(existing_run_id)
            except MlflowException:
                logger.warning("MLflow run %s is gone; creating a new one", existing_run_id)
            else:
                client.update_run(existing_run_id, status="RUNNING")
                for key, value in (tags or {}).items():
                    client.set_tag(existing_run_id, key, value)
                return cls(client, existing_run_id)
        experiment = client.get_experiment_by_name(experiment_name)
        if experiment is not None:
            experiment_id = experiment.experiment_id
        else:
            try:
                experiment_id = client.create_experiment(experiment_name, artifact_location=artifact_location)
            except MlflowException:  # another worker created it in between
                found = client.get_experiment_by_name(experiment_name)
                if found is None:
                    raise
                experiment_id = found.experiment_id
        run = client.create_run(experiment_id, run_name=run_name, tags=tags or {})
        return cls(client, run.info.run_id)

    def write_params(self, params: dict[str, Any]) -> None:
        from mlflow.entities import Param
        from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH, MAX_PARAMS_TAGS_PER_BATCH

        flat = [
            Param(
                _MLFLOW_KEY_RE.sub("_", key),
                (value if isinstance(value, str) else json.dumps(value))[:MAX_PARAM_VAL_LENGTH],
            )
            for key, value in flatten_params(params).items()
        ]
        for i in range(0, len(flat), MAX_PARAMS_TAGS_PER_BATCH):
            self.client.log_batch(self.run_id, params=flat[i : i + MAX_PARAMS_TAGS_PER_BATCH])

    def write_metrics(self, points: Sequence[MetricPoint]) -> None:
        from mlflow.entities import Metric
        from mlflow.utils.validation import MAX_METRICS_PER_BATCH

        metrics = [
            Metric(_MLFLOW_KEY_RE.sub("_", p.key), p.value, int(p.time * 1000), p.step) for p in points
        ]
        for i in range(0, len(metrics), MAX_METRICS_PER_BATCH):
            self.client.log_batch(self.run_id, metrics=metrics[i : i + MAX_METRICS_PER_BATCH])

    def write_result(self, kind: str, payload: dict[str, Any]) -> None:
        n = self._result_counts.get(kind, 0)
        self.client.log_dict(self.run_id, payload, f"results/{kind}-{n:03d}.json")
        self._result_counts[kind] = n + 1

    def write_logs(self, lines: Sequence[str]) -> None:
        """Log lines live on the platform (and in local logs.txt); MLflow has no log stream."""

    def finish(self, status: RunStatus) -> None:
        self.client.set_terminated(self.run_id, status=_MLFLOW_STATUS[status])

    def log_outputs(self, checkpoint_dir: Path, outputs_dir: Path | None) -> None:
        """A succeeded run's final model (its newest checkpoint, under ``model/``) and, on the platform,
        the files the kind wrote to its out_dir (under ``outputs/``), so MLflow's UI has them."""
        newest = _checkpoints(checkpoint_dir)[-1:] if checkpoint_dir.is_dir() else []
        for _, path in newest:
            self.client.log_artifact(self.run_id, str(path), "model")
        if outputs_dir is not None and outputs_dir.is_dir() and any(outputs_dir.iterdir()):
            self.client.log_artifacts(self.run_id, str(outputs_dir), "outputs")

    def is_transient(self, exc: BaseException) -> bool:
        from mlflow.exceptions import MlflowException

        if isinstance(exc, MlflowException):
            return exc.error_code not in {"INVALID_PARAMETER_VALUE", "RESOURCE_ALREADY_EXISTS", "BAD_REQUEST"}
        return True


# -- contexts -------------------------------------------------------------------------------------------


class TrackedRunContext(RunContext):
    """A RunContext whose records go, buffered, to a list of sinks; checkpoints go to ``checkpoint_dir``.

    Metrics are buffered per sink and written by a background thread (WriterOptions: every ~1 s or
    1,000 points, batches <= 10,000, retries with backoff). ``save_checkpoint`` flushes first, so a run
    resumed from a checkpoint never lacks a point logged before it. ``close`` flushes everything.
    """

    def __init__(
        self,
        *,
        seed: int,
        device: str,
        out_dir: Path,
        checkpoint_dir: Path,
        sinks: Sequence[Sink],
        options: WriterOptions | None = None,
        keep_checkpoints: int = 2,
    ) -> None:
        self.seed = seed
        self.device = device
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.checkpoint_dir = Path(checkpoint_dir)
        # files of the kind to upload to the MLflow mirror at the end; None where out_dir is itself the
        # local record of the run (reasonlab run: metrics.jsonl, the MLflow store, ...)
        self.outputs_dir: Path | None = None
        self.keep_checkpoints = keep_checkpoints
        self.writers = [SinkWriter(sink, options) for sink in sinks]
        self.stop_reason: str | None = None
        self._stop = threading.Event()
        self._progress_lock = threading.Lock()
        self._progress: dict[str, Any] | None = None
        self._closed = False

    # -- RunContext -------------------------------------------------------------------------------------

    def log_params(self, params: dict[str, Any]) -> None:
        snapshot = json.loads(json.dumps(params, default=str))  # a copy the kind cannot mutate later
        for writer in self.writers:
            writer.add_op(("params", snapshot))

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        now = time.time()
        points = [MetricPoint(str(key), int(step), float(value), now) for key, value in metrics.items()]
        for writer in self.writers:
            writer.add_metrics(points)

    def log_result(self, record: Any) -> None:
        kind, payload = result_record(record)
        for writer in self.writers:
            writer.add_op(("result", (kind, payload)))

    def log(self, line: str) -> None:
        for writer in self.writers:
            writer.add_logs([line])

    def progress(self, done: int, total: int, message: str = "") -> None:
        with self._progress_lock:
            self._progress = {"done": int(done), "total": int(total), "message": message}

    def progress_snapshot(self) -> dict[str, Any] | None:
        with self._progress_lock:
            return dict(self._progress) if self._progress is not None else None

    def should_stop(self) -> bool:
        return self._stop.is_set()

    def request_stop(self, reason: str) -> None:
        """Ask the kind to stop (``cancel``, ``lease_lost``, ``interrupt``); the first reason sticks."""
        if not self._stop.is_set():
            self.stop_reason = reason
            self._stop.set()

    def save_checkpoint(self, state: dict[str, Any], step: int) -> None:
        self.flush(required_only=True)  # a mirror (MLflow) being down must not hold training up
        save_checkpoint_file(self.checkpoint_dir, state, step, keep=self.keep_checkpoints)

    def load_checkpoint(self) -> tuple[dict[str, Any], int] | None:
        return load_checkpoint_file(self.checkpoint_dir)

    # -- flushing and closing ---------------------------------------------------------------------------

    def flush(self, *, required_only: bool = False) -> None:
        """Write everything buffered: required sinks within their deadline (else TrackingError), mirrors
        within theirs (else a warning); ``required_only`` leaves the mirrors to their background thread."""
        for writer in self.writers:
            if required_only and not writer.sink.required:
                continue
            if not writer.flush(writer.sink.flush_deadline):
                self._sink_failed(
                    writer, f"{writer.pending} records unwritten after {writer.sink.flush_deadline} s"
                )
            if writer.errors:
                self._sink_failed(writer, f"rejected: {writer.errors[-1]}")

    def _sink_failed(self, writer: SinkWriter, what: str) -> None:
        message = f"sink {writer.sink.name}: {what}"
        if writer.sink.required:
            raise TrackingError(message)
        logger.warning("%s (mirror; the run goes on)", message)
        writer.errors.clear()

    def close(self, status: RunStatus, *, final: bool = True) -> None:
        """Flush every sink (blocking, with retries up to each sink's deadline), tell them the final
        status (unless ``final`` is False: the run goes on in another attempt), stop their threads.
        Raises TrackingError if a required sink lost or refused records."""
        if self._closed:
            return
        self._closed = True
        problems: list[str] = []
        if final and status == "succeeded":
            for writer in self.writers:
                log_outputs = getattr(writer.sink, "log_outputs", None)
                if log_outputs is None:
                    continue
                try:
                    log_outputs(self.checkpoint_dir, self.outputs_dir)
                except Exception as exc:  # a mirror: the run's result does not depend on it
                    logger.warning("sink %s: final model and outputs not logged: %s", writer.sink.name, exc)
        for writer in self.writers:
            sink = writer.sink
            ok = writer.close(sink.flush_deadline)
            if ok and not writer.errors and final:
                try:
                    sink.finish(status)
                except Exception as exc:
                    ok = False
                    writer.errors.append(exc)
            if not ok or writer.errors:
                what = f"sink {sink.name}: {writer.pending} unwritten, errors: {writer.errors[-3:]}"
                if sink.required:
                    problems.append(what)
                else:
                    logger.warning("%s (mirror)", what)
        if problems:
            raise TrackingError("; ".join(problems))

    def __enter__(self) -> TrackedRunContext:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        self.close("failed" if exc_type is not None else "succeeded")


class LocalRunContext(TrackedRunContext):
    """A run on a laptop or in a test: local files under ``out_dir`` (+ an MLflow mirror when given).

    Checkpoints go to ``out_dir/checkpoints``, so running the same spec into the same folder again
    resumes from the last one. ``progress_callback(done, total, message)`` drives a progress bar.
    """

    def __init__(
        self,
        out_dir: Path,
        *,
        seed: int = 0,
        device: str = "auto",
        mlflow: MlflowSink | None = None,
        progress_callback: Callable[[int, int, str], None] | None = None,
        options: WriterOptions | None = None,
    ) -> None:
        out = Path(out_dir)
        sinks: list[Sink] = [LocalSink(out)]
        if mlflow is not None:
            sinks.append(mlflow)
        super().__init__(
            seed=seed,
            device=resolve_device(device),
            out_dir=out,
            checkpoint_dir=out / "checkpoints",
            sinks=sinks,
            options=options,
        )
        self.mlflow = mlflow
        self._progress_callback = progress_callback

    def progress(self, done: int, total: int, message: str = "") -> None:
        super().progress(done, total, message)
        if self._progress_callback is not None:
            self._progress_callback(done, total, message)


class ApiRunContext(TrackedRunContext):
    """A run on the platform: records to the API (the database), mirrored to MLflow; checkpoints under
    ``<artifact_root>/checkpoints/run-<id>/`` (shared by every attempt, so a new attempt resumes).

    The executor's heartbeat thread sets the stop flag (``request_stop``) on cancel, and marks
    ``lease_lost`` when the API says this attempt no longer owns the run: from then on checkpoints are
    not written (the next attempt owns them) and the executor sends no finish.
    """

    def __init__(
        self,
        client: ReasonLabClient,
        run_id: int,
        attempt: int,
        *,
        seed: int,
        device: str,
        artifact_root: Path,
        mlflow: MlflowSink | None = None,
        options: WriterOptions | None = None,
    ) -> None:
        root = Path(artifact_root)
        sinks: list[Sink] = [ApiSink(client, run_id, attempt)]
        if mlflow is not None:
            sinks.append(mlflow)
        super().__init__(
            seed=seed,
            device=resolve_device(device),
            out_dir=root / "runs" / f"run-{run_id}",
            checkpoint_dir=root / "checkpoints" / f"run-{run_id}",
            sinks=sinks,
            options=options,
        )
        self.outputs_dir = self.out_dir
        self.run_id = run_id
        self.attempt = attempt
        self.mlflow = mlflow
        self.lease_lost = False

    def mark_lease_lost(self) -> None:
        self.lease_lost = True
        self.request_stop("lease_lost")

    def save_checkpoint(self, state: dict[str, Any], step: int) -> None:
        if self.lease_lost:
            logger.warning(
                "run %s attempt %s lost its lease: checkpoint %s not written", self.run_id, self.attempt, step
            )
            self.flush()
            return
        super().save_checkpoint(state, step)
