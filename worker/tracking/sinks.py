"""The required sinks: the platform database through the REST API (``ApiSink``) and files under a
local folder (``LocalSink``)."""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from worker.client import ApiError, ApiUnavailable, ReasonLabClient
from worker.tracking.context import RunStatus
from worker.tracking.writer import MetricPoint, Sink


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=UTC).isoformat().replace("+00:00", "Z")


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
