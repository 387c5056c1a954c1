"""How ReasonLab names things in MLflow, for both of its writers: the API's mirror of a platform run
(``backend.mirror``) and a local run's MLflow run (``worker.tracking.mlflow``, ``reasonlab run``), so one
spec run either way has the same metric names, param names and status in MLflow.

MLflow takes a metric, param or tag key made of letters, digits and ``_ - . space /``, at most 250
characters, that names no other path (``a/../b``, ``./a``, ``/a``, ``a/``, ``..x``:
``mlflow.utils.validation``); the platform takes any text but NUL in a key. ``mlflow_key`` maps one to
the other; MLflow itself is not imported (the API starts without it). Where a new experiment keeps its
artifacts (``artifact_location``) is named here too.
"""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path
from typing import Any

MAX_KEY = 250  # a metric's, param's or tag's key (mlflow.utils.validation.MAX_ENTITY_KEY_LENGTH)
MAX_PARAM_VALUE = 6000  # mlflow.utils.validation.MAX_PARAM_VAL_LENGTH

MLFLOW_STATUS: dict[str, str] = {"succeeded": "FINISHED", "failed": "FAILED", "cancelled": "KILLED"}
"""A finished run's status (``common.runs.FinalStatus``) as MLflow names it; a running one is ``RUNNING``."""

EXPERIMENT_TAGS: dict[str, str] = {"mlflow.experimentKind": "custom_model_development"}
"""The tags of an MLflow experiment either writer makes: MLflow's UI opens an experiment of this kind in its
model-training view (runs, metrics, params) rather than its GenAI view (traces), which it picks otherwise."""

_REFUSED_CHARACTER = re.compile(r"[^A-Za-z0-9_\-. /]")


def _another_path(name: str) -> bool:
    """MLflow would read ``name`` as a path to another name (``a/../b``, ``./a``, ``/a``, ``a/``)."""
    norm = posixpath.normpath(name)
    return norm != name or norm in (".", "..") or norm.startswith(("../", "/"))


def mlflow_key(key: str) -> str:
    """A platform key as MLflow names it: characters it refuses become ``_``; a key MLflow would read as
    another path has its slashes replaced too; one that starts with ``..`` (MLflow refuses it) gets a
    leading ``_``; and it is cut to MLflow's 250 characters."""
    name = _REFUSED_CHARACTER.sub("_", key)[:MAX_KEY]
    if name and _another_path(name):
        name = name.replace("/", "_")
    if name.startswith(".."):
        name = "_" + name[: MAX_KEY - 1]
        if _another_path(name):  # the cut left a trailing "/" or "/."
            name = name.replace("/", "_")
    return "_" if name in ("", ".") else name


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


def param_values(params: dict[str, Any]) -> dict[str, str]:
    """A run's resolved spec, or the params it logged, as MLflow params: flattened, keys as ``mlflow_key``
    names them (cut to 249 characters first, room for its ``_``), values as text (JSON unless a string)
    cut to MLflow's limit. Two keys MLflow names alike: the last in key order."""
    return {
        mlflow_key(k[: MAX_KEY - 1]): (v if isinstance(v, str) else json.dumps(v))[:MAX_PARAM_VALUE]
        for k, v in sorted(flatten_params(params).items())
    }


def result_artifact(kind: str, n: int) -> str:
    """The MLflow artifact of a run's n-th result record of ``kind`` (from 0): ``results/<kind>-<n>.json``."""
    return f"results/{mlflow_key(f'{kind}-{n:03d}').replace('/', '_')}.json"


def artifact_location(tracking_uri: str, fallback: Path) -> str | None:
    """Where a new MLflow experiment keeps artifacts: the server decides for an http(s) store; for a file
    or database store a folder beside it (MLflow's default, ./mlruns, depends on the working directory)."""
    if tracking_uri.startswith(("http://", "https://", "databricks")):
        return None
    if tracking_uri.startswith("sqlite:///"):
        return (Path(tracking_uri.removeprefix("sqlite:///")).parent / "mlartifacts").resolve().as_uri()
    return fallback.resolve().as_uri()
