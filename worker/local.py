"""Run one spec on this machine without a server: ``reasonlab run spec.yaml``.

Tracking goes to files under ``out_dir`` (metrics.jsonl, results.jsonl, params.json, logs.txt,
status.json, checkpoints/) and, with ``mlflow_uri``, to an MLflow run. Running the same spec into the
same ``out_dir`` again resumes from its last checkpoint.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.mlflow_names import artifact_location
from common.runs import FinalStatus
from worker.kinds import get_kind
from worker.specs import SpecBase, spec_class
from worker.tracking.context import RunError
from worker.tracking.mlflow import MlflowSink
from worker.tracking.tracked import LocalRunContext

logger = logging.getLogger(__name__)

LOCAL_EXPERIMENT = "reasonlab-local"


@dataclass(frozen=True)
class LocalRunOutcome:
    status: FinalStatus
    out_dir: Path
    mlflow_run_id: str | None
    error: str | None  # the traceback of a failed run


class _LogToContext(logging.Handler):
    """Python logging of the run -> the context's log lines (logs.txt)."""

    def __init__(self, ctx: LocalRunContext) -> None:
        super().__init__(logging.INFO)
        self.ctx = ctx
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith(("httpx", "httpcore", "mlflow", "alembic", "urllib3")):
            return
        try:
            self.ctx.log(self.format(record))
        except Exception:
            self.handleError(record)


def resolve_spec(spec: SpecBase | dict[str, Any], kind: str | None = None) -> tuple[str, SpecBase]:
    """``(kind, validated spec)`` from a spec model or a dict (whose ``kind`` names the kind if not given).

    Raises ``worker.specs.UnknownKind`` for an undeclared kind, ``ValueError`` for a mismatch."""
    if isinstance(spec, SpecBase):
        name = kind or str(getattr(spec, "kind", ""))
        if not name:
            raise ValueError("the spec model has no kind; pass kind=")
        return name, spec_class(name).model_validate(spec.model_dump())
    requested = kind or spec.get("kind")
    cls = spec_class(requested)
    if spec.get("kind", requested) != requested:
        raise ValueError(f"the spec says kind {spec['kind']!r} but kind={requested!r} was asked for")
    return str(requested), cls.model_validate(spec)


def run_local(
    spec: SpecBase | dict[str, Any],
    kind: str | None = None,
    out_dir: str | Path = "reasonlab-run",
    mlflow_uri: str | None = None,
    progress_callback: Callable[[int, int, str], None] | None = None,
    *,
    run_name: str | None = None,
) -> LocalRunOutcome:
    """Validate ``spec``, run its kind in this process and return how it ended.

    A failing kind does not raise: the outcome is ``failed`` with the traceback (also in logs.txt and
    status.json). Ctrl-C checkpoints nothing more, closes the tracking as ``cancelled`` and re-raises.
    """
    name, validated = resolve_spec(spec, kind)
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)

    mlflow: MlflowSink | None = None
    if mlflow_uri:
        mlflow = MlflowSink.start(
            mlflow_uri,
            LOCAL_EXPERIMENT,
            run_name or out.name,
            tags={"reasonlab.kind": name, "reasonlab.out_dir": str(out)},
            artifact_location=artifact_location(mlflow_uri, out / "mlartifacts"),
        )
    ctx = LocalRunContext(
        out,
        seed=validated.seed,
        device=validated.resources.device,
        mlflow=mlflow,
        progress_callback=progress_callback,
    )
    handler = _LogToContext(ctx)
    root = logging.getLogger()
    root.addHandler(handler)
    worker_logger = logging.getLogger("worker")
    old_level = worker_logger.level
    if worker_logger.getEffectiveLevel() > logging.INFO:
        worker_logger.setLevel(logging.INFO)
    status: FinalStatus = "succeeded"
    error: str | None = None
    try:
        get_kind(name).run(validated, ctx)
    except KeyboardInterrupt:
        ctx.request_stop("interrupt")
        root.removeHandler(handler)
        ctx.close("cancelled")
        raise
    except RunError as exc:  # the kind explained the failure: its message, no traceback
        status, error = "failed", f"{type(exc).__name__}: {exc}"
        logger.error("run failed: %s", error)
    except Exception:
        status, error = "failed", traceback.format_exc()
        logger.error("run failed:\n%s", error)
    finally:
        root.removeHandler(handler)
        worker_logger.setLevel(old_level)
    if status == "succeeded" and ctx.should_stop():
        status = "cancelled"
    ctx.close(status)
    return LocalRunOutcome(
        status=status, out_dir=out, mlflow_run_id=mlflow.run_id if mlflow else None, error=error
    )
