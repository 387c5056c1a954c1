"""Tracking of a run: the RunContext a kind reports through, and what carries its records.

    context      RunContext (the contract kinds import: no torch, httpx or mlflow), result_record (a
                 run's final status is common.runs.FinalStatus)
    writer       Sink (the interface), MetricPoint, SinkWriter (buffer + background flush), WriterOptions
    checkpoints  atomic step-<n>.pt files, the newest kept
    sinks        ApiSink (the platform, over REST), LocalSink (files under a folder)
    mlflow       MlflowSink (a local run's MLflow run: platform runs are the API's; names as
                 common.mlflow_names gives them, like the API's mirror)
    tracked      TrackedRunContext, LocalRunContext, ApiRunContext, TrackingError, resolve_device

Every public name is re-exported here, ``from worker.tracking import X``, and imported on first use:
importing ``worker.tracking.context`` (which runs this file first) must stay light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from worker.tracking.checkpoints import load_checkpoint_file, save_checkpoint_file
    from worker.tracking.context import RunContext, result_record
    from worker.tracking.mlflow import MlflowSink
    from worker.tracking.sinks import ApiSink, LocalSink
    from worker.tracking.tracked import (
        ApiRunContext,
        LocalRunContext,
        TrackedRunContext,
        TrackingError,
        resolve_device,
    )
    from worker.tracking.writer import MetricPoint, Sink, SinkWriter, WriterOptions

_EXPORTS = {
    "RunContext": "context",
    "result_record": "context",
    "MetricPoint": "writer",
    "Sink": "writer",
    "SinkWriter": "writer",
    "WriterOptions": "writer",
    "load_checkpoint_file": "checkpoints",
    "save_checkpoint_file": "checkpoints",
    "ApiSink": "sinks",
    "LocalSink": "sinks",
    "MlflowSink": "mlflow",
    "ApiRunContext": "tracked",
    "LocalRunContext": "tracked",
    "TrackedRunContext": "tracked",
    "TrackingError": "tracked",
    "resolve_device": "tracked",
}

__all__ = [
    "ApiRunContext",
    "ApiSink",
    "LocalRunContext",
    "LocalSink",
    "MetricPoint",
    "MlflowSink",
    "RunContext",
    "Sink",
    "SinkWriter",
    "TrackedRunContext",
    "TrackingError",
    "WriterOptions",
    "load_checkpoint_file",
    "resolve_device",
    "result_record",
    "save_checkpoint_file",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
