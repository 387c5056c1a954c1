"""What the mirror writes to MLflow (``MlflowTarget``), behind a small interface (``Target``) that tests
wrap to count calls or to play an MLflow that is down. MLflow is imported lazily: the API starts without
it, and only the leader's mirror thread loads it.

MLflow's tracking store appends a metric point: logging a (key, step) again with another value or time
makes a second entry (its primary key is key, timestamp, step, run, value), while the very same point
(value, timestamp and step) is ignored. The mirror therefore sends each point once, stamped with the time
the platform stored for it, so that a batch sent again after an API crash (MLflow acknowledged it, the
watermark was not committed) is the same points and adds nothing.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from common.mlflow_names import EXPERIMENT_TAGS, MAX_KEY, artifact_location, mlflow_key

logger = logging.getLogger("reasonlab.mirror")

# log_batch limits of MLflow's REST API (mlflow.utils.validation), fixed here so that tests need no MLflow
MAX_METRICS_PER_BATCH = 1000
MAX_PARAMS_PER_BATCH = 100
MAX_TAG_VALUE = 5000
# a param the run logged again with another value than the one its MLflow run has (MLflow params are
# immutable): the platform's value goes to the tag of this prefix and the param's name
PARAM_CONFLICT_TAG = "reasonlab.param_conflict."


def conflict_tag(key: str) -> str:
    """The tag that holds the platform's value of the MLflow param ``key`` when they differ."""
    return mlflow_key(f"{PARAM_CONFLICT_TAG}{key}"[: MAX_KEY - 1])


class Target(Protocol):
    """What the mirror needs of MLflow. Every call either succeeds or raises."""

    def ensure_run(
        self, experiment: str, name: str, tags: dict[str, str], find: dict[str, str], start_ms: int | None
    ) -> str:
        """The id of the active run of ``experiment`` tagged ``find``, made (with ``tags``, starting at
        ``start_ms``, milliseconds since the epoch; None: now) if none."""
        ...

    def log_params(self, run_id: str, params: dict[str, str]) -> None: ...

    def run_params(self, run_id: str) -> tuple[dict[str, str], dict[str, str]]:
        """The params and tags the MLflow run has."""
        ...

    def log_metrics(self, run_id: str, points: Sequence[tuple[str, float, int, int]]) -> None:
        """``(key, value, timestamp_ms, step)`` points, at most MAX_METRICS_PER_BATCH."""
        ...

    def set_tags(self, run_id: str, tags: dict[str, str]) -> None: ...

    def set_status(self, run_id: str, status: str, duration_ms: int | None = None) -> None:
        """``RUNNING`` or a terminal MLflow status (FINISHED, FAILED, KILLED); a terminal one with
        ``duration_ms`` ends the run that long after its start time (MLflow's duration is end - start),
        without it now."""
        ...

    def log_dict(self, run_id: str, payload: dict[str, Any], path: str) -> None: ...

    def log_file(self, run_id: str, local: Path, folder: str) -> None: ...

    def delete_runs(self, experiment: str, find: dict[str, str], keep: str) -> int:
        """Delete the active runs of ``experiment`` tagged ``find`` but ``keep``; how many."""
        ...


def init_sqlite_store(path: Path) -> None:
    """Make a new sqlite MLflow store whole or not at all. MLflow creates its tables with migrations whose
    SQLite table rewrites are not transactional: an API killed meanwhile left ``_alembic_tmp_runs`` behind
    and every later client failed on it. So a missing store is made under a temporary name and linked into
    place (never over a store another process, e.g. MLflow's UI server, made meanwhile)."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f".{path.name}.init-*"):  # a killed process's half-made store
        stale.unlink(missing_ok=True)
    tmp = path.with_name(f".{path.name}.init-{os.getpid()}")
    from mlflow import MlflowClient

    MlflowClient(tracking_uri=f"sqlite:///{tmp}").search_experiments(max_results=1)  # makes the tables
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)


def _filter(find: dict[str, str]) -> str:
    return " and ".join(f"tags.`{k}` = '{v}'" for k, v in sorted(find.items()))


class MlflowTarget:
    """``Target`` over ``mlflow.MlflowClient``. An http(s) server is asked with few retries (MLflow's
    default backoff waits minutes): the mirror retries at its next tick instead."""

    def __init__(self, tracking_uri: str, artifact_fallback: Path) -> None:
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
        from mlflow import MlflowClient

        if tracking_uri.startswith("sqlite:///"):
            init_sqlite_store(Path(tracking_uri.removeprefix("sqlite:///")))
        self.tracking_uri = tracking_uri
        self.client = MlflowClient(tracking_uri=tracking_uri)
        self.location = artifact_location(tracking_uri, artifact_fallback)
        self._experiments: dict[str, str] = {}

    def _experiment(self, name: str, create: bool = True) -> str | None:
        found = self._experiments.get(name)
        if found is not None:
            return found
        from mlflow.exceptions import MlflowException

        experiment = self.client.get_experiment_by_name(name)
        if experiment is not None:
            self._experiments[name] = experiment.experiment_id
            return str(experiment.experiment_id)
        if not create:
            return None
        try:
            made = self.client.create_experiment(name, artifact_location=self.location, tags=EXPERIMENT_TAGS)
        except MlflowException:  # made in between
            again = self.client.get_experiment_by_name(name)
            if again is None:
                raise
            made = again.experiment_id
        self._experiments[name] = str(made)
        return str(made)

    def ensure_run(
        self, experiment: str, name: str, tags: dict[str, str], find: dict[str, str], start_ms: int | None
    ) -> str:
        experiment_id = self._experiment(experiment)
        assert experiment_id is not None
        found = self.client.search_runs([experiment_id], filter_string=_filter(find), max_results=1)
        if found:
            return str(found[0].info.run_id)
        made = self.client.create_run(experiment_id, start_time=start_ms, run_name=name, tags=tags)
        return str(made.info.run_id)

    def log_params(self, run_id: str, params: dict[str, str]) -> None:
        from mlflow.entities import Param

        items = [Param(k, v) for k, v in sorted(params.items())]
        for i in range(0, len(items), MAX_PARAMS_PER_BATCH):
            self.client.log_batch(run_id, params=items[i : i + MAX_PARAMS_PER_BATCH])

    def run_params(self, run_id: str) -> tuple[dict[str, str], dict[str, str]]:
        data = self.client.get_run(run_id).data
        return dict(data.params), dict(data.tags)

    def log_metrics(self, run_id: str, points: Sequence[tuple[str, float, int, int]]) -> None:
        from mlflow.entities import Metric

        self.client.log_batch(run_id, metrics=[Metric(k, v, t, s) for k, v, t, s in points])

    def set_tags(self, run_id: str, tags: dict[str, str]) -> None:
        from mlflow.entities import RunTag

        self.client.log_batch(run_id, tags=[RunTag(k, v) for k, v in sorted(tags.items())])

    def set_status(self, run_id: str, status: str, duration_ms: int | None = None) -> None:
        if status == "RUNNING":
            self.client.update_run(run_id, status="RUNNING")
            return
        end_ms = None
        if duration_ms is not None:
            # from the start the MLflow run has (the mirror made it at the run's first claim; one made
            # otherwise, by an older mirror or a worker, keeps its own), so that end - start is the duration
            start_ms = self.client.get_run(run_id).info.start_time
            end_ms = None if start_ms is None else int(start_ms) + duration_ms
        self.client.set_terminated(run_id, status=status, end_time=end_ms)

    def log_dict(self, run_id: str, payload: dict[str, Any], path: str) -> None:
        self.client.log_dict(run_id, payload, path)

    def log_file(self, run_id: str, local: Path, folder: str) -> None:
        self.client.log_artifact(run_id, str(local), folder)

    def delete_runs(self, experiment: str, find: dict[str, str], keep: str) -> int:
        experiment_id = self._experiment(experiment, create=False)
        if experiment_id is None:
            return 0
        deleted = 0
        for run in self.client.search_runs([experiment_id], filter_string=_filter(find), max_results=100):
            if run.info.run_id != keep:
                self.client.delete_run(run.info.run_id)
                deleted += 1
        return deleted


def mlflow_value(value: float | None) -> float:
    """A stored point's value for MLflow, which has no gap: a gap (None) is NaN; NaN and infinities as
    logged."""
    return math.nan if value is None else value
