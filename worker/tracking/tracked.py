"""The concrete RunContexts: ``TrackedRunContext`` (records buffered to a list of sinks, checkpoints in a
folder), ``LocalRunContext`` (a laptop or a test: local files, optional MLflow run) and ``ApiRunContext``
(the platform: the API, which mirrors the run to MLflow itself; backend/mirror/)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from common.runs import FinalStatus
from worker.specs.base import MAX_EXAMPLE_ROWS
from worker.tracking.artifacts import RunArtifacts, TransferCancelled
from worker.tracking.checkpoints import checkpoint_files, load_checkpoint_file, save_checkpoint_file
from worker.tracking.context import RunContext, RunError, example_rows, result_record
from worker.tracking.redact import Redactor
from worker.tracking.sinks import ApiSink, LocalSink
from worker.tracking.writer import ExampleRow, MetricPoint, Sink, SinkWriter, WriterOptions

if TYPE_CHECKING:
    from reasonlab_sdk.client import ReasonLabClient
    from worker.tracking.mlflow import MlflowSink

logger = logging.getLogger(__name__)


EXAMPLE_BATCH = 500  # per-example rows per post (the API takes up to 1,000)


class TrackingError(RuntimeError):
    """A required sink could not persist what the run logged (rejected, or unreachable past a deadline)."""


def resolve_device(requested: str) -> str:
    """``auto`` -> ``cuda`` when this process sees a GPU, else ``cpu``; ``cuda`` without one is an error."""
    import torch  # here: the worker's own processes import this module and never need torch (~1.1 CPU-s)

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"the spec asks for device {requested!r} but this worker has no CUDA device")
    return requested


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
        # files of the kind to upload to a sink's MLflow run at the end (log_outputs); None where out_dir
        # is itself the local record of the run (reasonlab run: metrics.jsonl, the MLflow store, ...)
        self.outputs_dir: Path | None = None
        self.keep_checkpoints = keep_checkpoints
        self.writers = [SinkWriter(sink, options) for sink in sinks]
        self.stop_reason: str | None = None
        self._stop = threading.Event()
        self._progress_lock = threading.Lock()
        self._progress: dict[str, Any] | None = None
        self._closed = False
        self.redactor = Redactor()  # the secrets this run was handed, masked in all it records
        # per-example tables: rows waiting for a batch, the next idx and the keys logged, per table
        self._examples_lock = threading.Lock()
        self._example_rows: dict[str, list[ExampleRow]] = {}
        self._example_keys: dict[str, set[str]] = {}
        self._examples_dropped: dict[str, int] = {}  # rows past MAX_EXAMPLE_ROWS, per table (not kept)

    # -- RunContext -------------------------------------------------------------------------------------

    def log_params(self, params: dict[str, Any]) -> None:
        snapshot = json.loads(json.dumps(params, default=str))  # a copy the kind cannot mutate later
        snapshot = self.redactor.value(snapshot)
        for writer in self.writers:
            writer.add_op(("params", snapshot))

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        now = time.time()
        points = [MetricPoint(str(key), int(step), float(value), now) for key, value in metrics.items()]
        for writer in self.writers:
            writer.add_metrics(points)

    def log_result(self, record: Any) -> None:
        kind, payload = result_record(record)
        payload = self.redactor.value(payload)
        for writer in self.writers:
            writer.add_op(("result", (kind, payload)))

    def log_examples(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        checked = example_rows(table, rows)
        with self._examples_lock:
            keys = self._example_keys.setdefault(table, set())
            pending = self._example_rows.setdefault(table, [])
            for key, data in checked:
                if key in keys:
                    raise ValueError(f"example key {key!r} logged twice in table {table!r}")
                if len(keys) >= MAX_EXAMPLE_ROWS:
                    # past the platform's cap (the API refuses the row): the run goes on, its log says so
                    if table not in self._examples_dropped:
                        self.log(
                            f"table {table!r} holds at most {MAX_EXAMPLE_ROWS:,} rows (the platform's cap): the "
                            f"rows from {key!r} on are not kept"
                        )
                    self._examples_dropped[table] = self._examples_dropped.get(table, 0) + 1
                    continue
                keys.add(key)
                pending.append(ExampleRow(len(keys) - 1, key, self.redactor.value(data)))
            if len(pending) >= EXAMPLE_BATCH:
                self._send_examples(table)

    def _send_examples(self, table: str) -> None:
        """Hand ``table``'s waiting rows to the writers, in batches (the caller holds the lock)."""
        pending = self._example_rows.pop(table, [])
        for i in range(0, len(pending), EXAMPLE_BATCH):
            for writer in self.writers:
                writer.add_op(("examples", (table, pending[i : i + EXAMPLE_BATCH])))

    def _send_all_examples(self) -> None:
        with self._examples_lock:
            for table in list(self._example_rows):
                self._send_examples(table)

    def log(self, line: str) -> None:
        line = self.redactor.text(line)
        for writer in self.writers:
            writer.add_logs([line])

    def progress(self, done: int, total: int, message: str = "") -> None:
        with self._progress_lock:
            self._progress = {"done": int(done), "total": int(total), "message": message}

    @property
    def closed(self) -> bool:
        """True once ``close`` began: nothing logged after it is written."""
        return self._closed

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
        self._send_all_examples()
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

    def close(self, status: FinalStatus, *, final: bool = True) -> None:
        """Flush every sink (blocking, with retries up to each sink's deadline), tell them the final
        status (unless ``final`` is False: the run goes on in another attempt), stop their threads.
        Raises TrackingError if a required sink lost or refused records."""
        if self._closed:
            return
        self._send_all_examples()
        with self._examples_lock:
            for table, dropped in sorted(self._examples_dropped.items()):
                self.log(
                    f"table {table!r}: kept {MAX_EXAMPLE_ROWS:,} rows, {dropped:,} past the cap not kept"
                )
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

    def secret(self, name: str) -> str:
        """``reasonlab run`` has no platform: the secret comes from ``REASONLAB_SECRET_<NAME>``."""
        variable = f"REASONLAB_SECRET_{name.upper()}"
        value = os.environ.get(variable)
        if not value:
            raise RunError(f"secret {name!r}: set {variable} in the environment of this local run")
        self.redactor.add(value)
        return value

    def secret_hosts(self, name: str) -> tuple[str, ...] | None:
        """``REASONLAB_SECRET_<NAME>_HOSTS`` (comma-separated) where set; else no bound (the key is the
        user's own, from their own environment)."""
        listed = os.environ.get(f"REASONLAB_SECRET_{name.upper()}_HOSTS")
        if listed is None:
            return None
        return tuple(h.strip() for h in listed.split(",") if h.strip())

    def progress(self, done: int, total: int, message: str = "") -> None:
        super().progress(done, total, message)
        if self._progress_callback is not None:
            self._progress_callback(done, total, message)


class ApiRunContext(TrackedRunContext):
    """A run on the platform: records to the API (the database; the API mirrors them to MLflow, the worker
    never talks to MLflow); checkpoints under
    ``<artifact_root>/checkpoints/run-<id>/`` locally and, through the API, in the platform's artifact
    store (``worker.tracking.artifacts``), so a new attempt on any host resumes from the newest one; the
    out_dir and the final model go to the store when the run succeeds.

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
        options: WriterOptions | None = None,
    ) -> None:
        root = Path(artifact_root)
        sinks: list[Sink] = [ApiSink(client, run_id, attempt)]
        super().__init__(
            seed=seed,
            device=resolve_device(device),
            out_dir=root / "runs" / f"run-{run_id}",
            checkpoint_dir=root / "checkpoints" / f"run-{run_id}",
            sinks=sinks,
            options=options,
        )
        self.artifact_root = root
        self.run_id = run_id
        self.attempt = attempt
        self.lease_lost = False
        # a cancel ends the transfers of the run (downloads before the kind's loop, the outputs' upload)
        self.artifacts = RunArtifacts(client, run_id, attempt, stop=lambda: self.stop_reason == "cancel")
        self.closed_as: FinalStatus | None = None  # the status close() told the sinks
        self._client = client
        self._resume_reported = False  # the first checkpoint loaded is what the attempt resumed from
        self._datasets: dict[str, Path] = {}  # dataset name -> its local copy (fetch_dataset)
        self._secret_hosts: dict[str, tuple[str, ...]] = {}  # secret name -> where it may be sent

    def secret(self, name: str) -> str:
        """The project secret ``name``, asked of the API with this run's token (the API hands out only
        the secrets this run's spec names); masked from here on in everything the run records."""
        from reasonlab_sdk.client import ApiError

        try:
            secret = self._client.run_secret(self.run_id, name)
        except ApiError as exc:
            raise RunError(f"secret {name!r}: {exc}") from None
        value = secret["value"]
        self.redactor.add(value)
        self._secret_hosts[name] = tuple(secret["hosts"])
        return value

    def secret_hosts(self, name: str) -> tuple[str, ...] | None:
        """The hosts the API handed with the secret (none before ``secret(name)``: sent nowhere)."""
        return self._secret_hosts.get(name, ())

    def fetch_dataset(self, name: str, field: str) -> Path:
        """A dataset uploaded to the run's project that its spec names (``dataset:<name>`` in ``field``),
        downloaded once with this run's token into ``<artifact_root>/datasets/run-<id>/<name>`` (its
        checksum checked) and that local file returned."""
        from reasonlab_sdk.client import ApiError
        from worker.core.data.offline import OutsideStore, inside
        from worker.specs.confine import Refused, dataset_name

        if name in self._datasets:
            return self._datasets[name]
        try:
            dataset_name(name)
        except Refused as exc:
            raise Refused(f"{field}: {exc}") from None
        folder = self.artifact_root / "datasets" / f"run-{self.run_id}"
        folder.mkdir(parents=True, exist_ok=True)
        try:
            local = inside(folder, name)
        except OutsideStore:
            raise Refused(f"{field}: dataset {name!r} leads outside the run's folder") from None
        try:
            self._client.download_dataset(self.run_id, name, local)
        except ApiError as exc:
            raise RunError(f"{field}: dataset {name!r}: {exc}") from None
        try:
            local = inside(folder, name)  # nothing replaced it by a link meanwhile
        except OutsideStore:
            raise Refused(f"{field}: dataset {name!r} leads outside the run's folder") from None
        self.log(f"dataset {name!r} downloaded for {field} ({local.stat().st_size} bytes)")
        self._datasets[name] = local
        return local

    def run_outputs(self, run_id: int) -> Path | None:
        """Another run's outputs, pulled from the artifact store into ``<artifact_root>/runs/run-<id>``
        (where they already are when that run ran on this host)."""
        local = self.artifact_root / "runs" / f"run-{run_id}"
        pulled = self.artifacts.pull_outputs(run_id, local)
        if pulled:
            self.log(f"{pulled} output files of run {run_id} downloaded from the artifact store")
        return local

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
        try:
            self.artifacts.push_checkpoint(
                self.checkpoint_dir / f"step-{step}.pt", step, self.keep_checkpoints
            )
        except Exception as exc:  # the local copy still resumes a run on this host; training goes on
            logger.warning(
                "run %s attempt %s: checkpoint %s not stored (another host could not resume from it): %s",
                self.run_id,
                self.attempt,
                step,
                exc,
            )

    def load_checkpoint(self) -> tuple[dict[str, Any], int] | None:
        """The newest checkpoint of the run, from any attempt on any host: the store's newer ones are
        downloaded first (a host that never ran this run has none of its own)."""
        try:
            pulled = self.artifacts.pull_checkpoints(self.checkpoint_dir)
        except Exception as exc:
            logger.warning("run %s: stored checkpoints not read (%s); using this host's", self.run_id, exc)
        else:
            if pulled:  # in the run's own log too (the capture skips worker.tracking's records)
                self.log(f"checkpoint step {pulled[-1]} downloaded from the artifact store")
        found = super().load_checkpoint()
        if found is not None and not self._resume_reported:
            self._report_resumed(found[1])
        return found

    def _report_resumed(self, step: int) -> None:
        """Only the worker knows the attempt resumed: the API notes it in the run's log, the activity feed
        and the attempt history. Best effort: the run goes on whatever the answer."""
        self._resume_reported = True
        try:
            self._client.resumed(self.run_id, self.attempt, step)
        except Exception as exc:
            logger.warning(
                "run %s attempt %s: resume from step %s not reported: %s",
                self.run_id,
                self.attempt,
                step,
                exc,
            )

    def close(self, status: FinalStatus, *, final: bool = True) -> None:
        """A succeeded run stores its out_dir and final model before its sinks hear it succeeded: a run
        that finished without them (the API unreachable past the deadline) fails instead. The attempt's
        dataset copies are removed however it ends (a resumed attempt downloads them again)."""
        if self._closed:
            return
        try:
            self._close(status, final=final)
        finally:
            self._remove_dataset_copies()

    def _remove_dataset_copies(self) -> None:
        """``<artifact_root>/datasets/run-<id>``, which ``fetch_dataset`` filled: without this every run
        that read an uploaded dataset left its copy on the worker's disk. A link put in its place is
        removed, never followed."""
        folder = self.artifact_root / "datasets" / f"run-{self.run_id}"
        try:
            if folder.is_symlink():
                folder.unlink()
            elif folder.exists():
                shutil.rmtree(folder)
        except OSError as exc:  # the run's outcome does not depend on it
            logger.warning("run %s: dataset copies in %s not removed: %s", self.run_id, folder, exc)
        self._datasets.clear()

    def _close(self, status: FinalStatus, *, final: bool) -> None:
        self.closed_as = status
        if final and status == "succeeded" and not self.lease_lost:
            try:
                stored = self.artifacts.push_outputs(self.out_dir, self.checkpoint_dir)
            except TransferCancelled:  # cancelled while its outputs went up: it ends cancelled, at once
                logger.warning(
                    "run %s: cancelled while storing its outputs; the rest is not stored", self.run_id
                )
                self.closed_as = "cancelled"
                super().close("cancelled", final=final)
                return
            except Exception as exc:
                self.closed_as = "failed"
                super().close("failed", final=final)
                raise TrackingError(f"outputs and final model not stored: {exc}") from exc
            newest = checkpoint_files(self.checkpoint_dir)[-1:]
            model = f"step {newest[0][0]}" if newest else "none (no checkpoint)"
            logger.info("run %s: %d artifacts stored; final model %s", self.run_id, stored, model)
        super().close(status, final=final)
