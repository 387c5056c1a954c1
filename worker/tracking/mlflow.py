"""The MLflow run of a local run (``MlflowSink``: ``reasonlab run spec.yaml``, which has no API): best
effort, its failures never fail the run. MLflow itself is imported lazily, inside the methods.

A platform run never comes here: the API mirrors it to MLflow from the database (backend/mirror/), and a
worker needs no MLflow URL. Both name keys, params and statuses alike (``common.mlflow_names``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common.mlflow_names import EXPERIMENT_TAGS, MLFLOW_STATUS, mlflow_key, param_values, result_artifact
from common.runs import FinalStatus
from worker.tracking.checkpoints import checkpoint_files
from worker.tracking.writer import MetricPoint, Sink

logger = logging.getLogger(__name__)


class MlflowSink(Sink):
    """A local run's MLflow run: params (flattened), metrics (log_batch), results (JSON artifacts) and the
    final status. Best effort: an MLflow outage never fails or blocks the run for long."""

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
    ) -> MlflowSink:
        """Create the MLflow run (and its experiment)."""
        from mlflow import MlflowClient
        from mlflow.exceptions import MlflowException

        client = MlflowClient(tracking_uri=tracking_uri)
        experiment = client.get_experiment_by_name(experiment_name)
        if experiment is not None:
            experiment_id = experiment.experiment_id
        else:
            try:
                experiment_id = client.create_experiment(
                    experiment_name, artifact_location=artifact_location, tags=EXPERIMENT_TAGS
                )
            except MlflowException:  # another worker created it in between
                found = client.get_experiment_by_name(experiment_name)
                if found is None:
                    raise
                experiment_id = found.experiment_id
        run = client.create_run(experiment_id, run_name=run_name, tags=tags or {})
        return cls(client, run.info.run_id)

    def write_params(self, params: dict[str, Any]) -> None:
        from mlflow.entities import Param
        from mlflow.utils.validation import MAX_PARAMS_TAGS_PER_BATCH

        flat = [Param(key, value) for key, value in param_values(params).items()]
        for i in range(0, len(flat), MAX_PARAMS_TAGS_PER_BATCH):
            self.client.log_batch(self.run_id, params=flat[i : i + MAX_PARAMS_TAGS_PER_BATCH])

    def write_metrics(self, points: Sequence[MetricPoint]) -> None:
        from mlflow.entities import Metric
        from mlflow.utils.validation import MAX_METRICS_PER_BATCH

        metrics = [Metric(mlflow_key(p.key), p.value, int(p.time * 1000), p.step) for p in points]
        for i in range(0, len(metrics), MAX_METRICS_PER_BATCH):
            self.client.log_batch(self.run_id, metrics=metrics[i : i + MAX_METRICS_PER_BATCH])

    def write_result(self, kind: str, payload: dict[str, Any]) -> None:
        n = self._result_counts.get(kind, 0)
        self.client.log_dict(self.run_id, payload, result_artifact(kind, n))
        self._result_counts[kind] = n + 1

    def write_logs(self, lines: Sequence[str]) -> None:
        """Log lines live on the platform (and in local logs.txt); MLflow has no log stream."""

    def finish(self, status: FinalStatus) -> None:
        self.client.set_terminated(self.run_id, status=MLFLOW_STATUS[status])

    def log_outputs(self, checkpoint_dir: Path, outputs_dir: Path | None) -> None:
        """A succeeded run's final model (its newest checkpoint, under ``model/``) and, when given, the
        files the kind wrote to its outputs folder (under ``outputs/``), so MLflow's UI has them."""
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
