"""The MLflow mirror of a run (``MlflowSink``): best effort, its failures never fail the run. MLflow
itself is imported lazily, inside the methods.

MLflow appends every logged point (a second point at the same key and step is a second entry), whereas
the platform upserts. So a later attempt of a run (resumed from its checkpoint, it logs again the steps
between that checkpoint and the crash) must not send the mirror a step it already holds: the reopened
sink reads the last mirrored step of every key once (MLflow's latest metrics, which keep the largest
step), ``catch_up`` copies what the platform holds beyond it (the steps the old attempt sent the API but
not yet the mirror when it died), and ``write_metrics`` then skips every point at or below that floor. A
resumed run is bit-exact, so what it skips is what the mirror already has: one entry per (key, step).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from worker.tracking.checkpoints import checkpoint_files
from worker.tracking.context import RunStatus, flatten_params
from worker.tracking.writer import MetricPoint, Sink

logger = logging.getLogger(__name__)

_MLFLOW_STATUS = {"succeeded": "FINISHED", "failed": "FAILED", "cancelled": "KILLED"}
_MLFLOW_KEY_RE = re.compile(r"[^A-Za-z0-9_\-. /]")
_NO_STEP = -(2**63)  # below every step: a key with no mirrored point


def mlflow_key(key: str) -> str:
    """A metric key as the mirror names it (MLflow refuses some characters the platform accepts)."""
    return _MLFLOW_KEY_RE.sub("_", key)


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

    def __init__(self, client: Any, run_id: str, floor: dict[str, int] | None = None) -> None:
        self.client = client  # mlflow.MlflowClient
        self.run_id = run_id
        self._result_counts: dict[str, int] = {}
        # per (MLflow) key, the largest step an earlier attempt mirrored: points at or below it are skipped
        self.floor: dict[str, int] = dict(floor or {})

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
                existing = client.get_run(existing_run_id)
            except MlflowException:
                logger.warning("MLflow run %s is gone; creating a new one", existing_run_id)
            else:
                client.update_run(existing_run_id, status="RUNNING")
                for key, value in (tags or {}).items():
                    client.set_tag(existing_run_id, key, value)
                # the latest metric of a key is the one at its largest step (MLflow's latest_metrics)
                floor = {m.key: int(m.step) for m in existing.data.to_proto().metrics}
                return cls(client, existing_run_id, floor)
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
            Metric(key, p.value, int(p.time * 1000), p.step)
            for p in points
            if p.step > self.floor.get(key := mlflow_key(p.key), _NO_STEP)
        ]
        for i in range(0, len(metrics), MAX_METRICS_PER_BATCH):
            self.client.log_batch(self.run_id, metrics=metrics[i : i + MAX_METRICS_PER_BATCH])

    def catch_up(self, points: Sequence[MetricPoint]) -> int:
        """Mirror ``points`` (what the platform holds of this run) that lie beyond the floor of their key,
        then raise each key's floor to the largest step given: a later attempt then skips the steps it logs
        again. Called once at the start of a later attempt, before the kind runs; MLflow errors propagate
        (the floor keeps only what was written). Returns how many points were written."""
        from mlflow.entities import Metric
        from mlflow.utils.validation import MAX_METRICS_PER_BATCH

        by_key: dict[str, list[MetricPoint]] = {}
        for p in points:
            by_key.setdefault(mlflow_key(p.key), []).append(p)
        written = 0
        for key, series in by_key.items():
            floor = self.floor.get(key, _NO_STEP)
            todo = sorted((p for p in series if p.step > floor), key=lambda p: p.step)
            for i in range(0, len(todo), MAX_METRICS_PER_BATCH):
                batch = todo[i : i + MAX_METRICS_PER_BATCH]
                metrics = [Metric(key, p.value, int(p.time * 1000), p.step) for p in batch]
                self.client.log_batch(self.run_id, metrics=metrics)
                self.floor[key] = max(self.floor.get(key, _NO_STEP), batch[-1].step)
                written += len(batch)
            top = max(p.step for p in series)
            self.floor[key] = max(self.floor.get(key, _NO_STEP), top)
        return written

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
        newest = checkpoint_files(checkpoint_dir)[-1:] if checkpoint_dir.is_dir() else []
        for _, path in newest:
            self.client.log_artifact(self.run_id, str(path), "model")
        if outputs_dir is not None and outputs_dir.is_dir() and any(outputs_dir.iterdir()):
            self.client.log_artifacts(self.run_id, str(outputs_dir), "outputs")

    def is_transient(self, exc: BaseException) -> bool:
        from mlflow.exceptions import MlflowException

        if isinstance(exc, MlflowException):
            return exc.error_code not in {"INVALID_PARAMETER_VALUE", "RESOURCE_ALREADY_EXISTS", "BAD_REQUEST"}
        return True
