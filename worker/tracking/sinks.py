"""The required sinks: the platform database through the REST API (``ApiSink``) and files under a
local folder (``LocalSink``)."""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from common import nonfinite
from common.mlflow_names import flatten_params
from common.runs import FinalStatus
from reasonlab_sdk.client import ApiError, ApiUnavailable, ReasonLabClient, is_storable, storable_text
from reasonlab_sdk.points import MAX_STEP
from worker.tracking.writer import ExampleRow, MetricPoint, Sink

logger = logging.getLogger(__name__)

T = TypeVar("T")
MAX_KEY_LENGTH = 250  # the API's metric key limit (docs/api.md, Metrics)
# what a 4xx of these statuses refuses is the content itself: sent again it is refused again, and the
# rest of the run's records must not wait behind it (401, 403, 404 and 409 stay errors of the run)
CONTENT_REFUSALS = frozenset({400, 413, 422})
WARNING_PREFIX = "WARNING reasonlab tracking:"


def metric_key_problem(key: str) -> str | None:
    """Why the API would refuse ``key`` (docs/api.md, Metrics), or None."""
    if not key:
        return "empty"
    if len(key) > MAX_KEY_LENGTH:
        return f"longer than {MAX_KEY_LENGTH} characters"
    if key.startswith("_"):
        return "starts with '_'"
    if not is_storable(key):
        return "a NUL character or a lone surrogate"
    return None


def _refused_indexes(exc: ApiError, field: str, count: int) -> set[int]:
    """The items of ``body.<field>`` a 422 names (``loc: ["body", field, i, ...]``)."""
    named: set[int] = set()
    for error in exc.errors:
        loc = error.get("loc") if isinstance(error, dict) else None
        if (
            isinstance(loc, list)
            and len(loc) >= 3
            and loc[:2] == ["body", field]
            and isinstance(loc[2], int)
            and 0 <= loc[2] < count
        ):
            named.add(loc[2])
    return named


def _refused_points(exc: ApiError, points: list[dict[str, Any]]) -> set[int]:
    """The points of a metric batch a 422 names: by the point (``loc: ["body", "points", i, ...]``), or by
    the key (``["body", "keys", k, ...]``: the compact body's k-th key, keys numbered in the order the batch
    first uses them, as ``reasonlab_sdk.points.encode`` numbers them), which names every point of it."""
    named = _refused_indexes(exc, "points", len(points))
    keys = list(dict.fromkeys(p["key"] for p in points))
    refused_keys = {keys[k] for k in _refused_indexes(exc, "keys", len(keys))}
    return named | {i for i, p in enumerate(points) if p["key"] in refused_keys}


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=UTC).isoformat().replace("+00:00", "Z")


class LocalSink(Sink):
    """Files under ``out_dir``: metrics.jsonl, results.jsonl, params.json, logs.txt, status.json,
    examples/<table>.jsonl."""

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

    def write_examples(self, table: str, rows: Sequence[ExampleRow]) -> None:
        text = "".join(json.dumps({"idx": r.idx, "key": r.key, "data": r.data}) + "\n" for r in rows)
        (self.out_dir / "examples").mkdir(exist_ok=True)
        self._append(f"examples/{table}.jsonl", text)

    def write_logs(self, lines: Sequence[str]) -> None:
        self._append("logs.txt", "".join(line.rstrip("\n") + "\n" for line in lines))

    def finish(self, status: FinalStatus) -> None:
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
        self._warned_keys: set[str] = set()

    def write_params(self, params: dict[str, Any]) -> None:
        """Post them to the run's ``logged_params`` (flattened: ``derived.parameters``; the API merges them,
        the last value of a key kept, and its mirror logs them to MLflow). Text the API cannot store is
        escaped, a non-finite number sent as its JSON text (``NaN``); keys the API refuses (too long, a
        value over its limit) are dropped with a logged error and a warning line, the rest go on."""
        flat = {storable_text(key): _param_value(value) for key, value in flatten_params(params).items()}
        refused = self._post_params_but_refused(flat)
        if refused:
            n = len(refused)
            keys = ", ".join(f"{key!a}" for key, _ in refused[:10])
            self._warn(f"dropped {n} param{'s' if n != 1 else ''} the API refused ({keys}): {refused[0][1]}")

    def _post_params_but_refused(self, flat: dict[str, Any]) -> list[tuple[str, str]]:
        """Post ``flat``; when the API refuses the content, post the keys its 422 does not name (a 413 is
        split in halves: posts merge) and return the refused keys with the reason."""
        if not flat:
            return []
        try:
            self.client.post_params(self.run_id, flat, attempt=self.attempt)
            return []
        except ApiError as exc:
            if exc.status not in CONTENT_REFUSALS:
                raise
            reason = f"HTTP {exc.status} {exc.code or 'error'}: {exc.detail}"[:300]
            keys = list(flat)
            if exc.status == 413 and len(keys) > 1:
                half = len(keys) // 2
                return self._post_params_but_refused(
                    {k: flat[k] for k in keys[:half]}
                ) + self._post_params_but_refused({k: flat[k] for k in keys[half:]})
            named = {
                loc[2]
                for error in exc.errors
                if isinstance(error, dict)
                and isinstance(loc := error.get("loc"), list)
                and len(loc) >= 3
                and loc[:2] == ["body", "params"]
                and loc[2] in flat
            }
            if not named or len(named) == len(keys):
                return [(key, reason) for key in keys]
            rest = {k: v for k, v in flat.items() if k not in named}
            return [(key, reason) for key in keys if key in named] + self._post_params_but_refused(rest)

    def write_metrics(self, points: Sequence[MetricPoint]) -> None:
        """Post the batch. Points the API refuses (a key it cannot store, ...) are dropped with a logged
        error and a warning line in the run's logs; the rest of the batch, and every later one, go on."""
        dropped: list[tuple[str, str]] = []
        payload: list[dict[str, Any]] = []
        for p in points:
            problem = metric_key_problem(p.key)
            if problem is None and not 0 <= p.step <= MAX_STEP:  # the SDK's bound (reasonlab_sdk.points)
                # the compact body names only the first bad step of a batch (one post per bad point), and a
                # step past int64 cannot be encoded at all: refused for certain, never sent
                problem = f"step {p.step} is outside 0 to {MAX_STEP}"
            if problem is not None:  # refused for certain: never sent
                dropped.append((p.key, problem))
                continue
            # JSON has no NaN or inf: sent as the strings "NaN", "Infinity", "-Infinity", stored as such
            value = nonfinite.label(nonfinite.kind(p.value)) or p.value
            payload.append({"key": p.key, "step": p.step, "value": value, "time": _iso(p.time)})
        refused = self._post_all_but_refused(
            # the compact body: columns of numbers, ~10x less of the API's time to read than JSON objects
            lambda batch: self.client.post_metrics(self.run_id, batch, attempt=self.attempt, compact=True),
            payload,
            "points",
            _refused_points,
        )
        dropped += [(point["key"], reason) for point, reason in refused]
        if dropped:
            self._warn_dropped_points(dropped)

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

    def write_examples(self, table: str, rows: Sequence[ExampleRow]) -> None:
        # rows keep their idx: a retried post, or a resumed attempt's same rows, overwrites (the API upserts)
        body = [{"idx": r.idx, "key": r.key, "data": _json_safe(r.data)} for r in rows]
        self.client.post_examples(self.run_id, table, body, attempt=self.attempt)

    def write_logs(self, lines: Sequence[str]) -> None:
        refused = self._post_all_but_refused(
            lambda batch: self.client.post_logs(self.run_id, batch, attempt=self.attempt),
            [storable_text(line) for line in lines],
            "lines",
        )
        if refused:
            n = len(refused)
            self._warn(f"dropped {n} log line{'s' if n != 1 else ''} the API refused: {refused[0][1]}")

    def _post_all_but_refused(
        self,
        post: Callable[[list[T]], object],
        items: list[T],
        field: str,
        refused: Callable[[ApiError, list[T]], set[int]] | None = None,
    ) -> list[tuple[T, str]]:
        """Post ``items``; when the API refuses the content (400, 413, 422: never retried as it is), post
        what it did not name (a 422 names items by ``loc``, read by ``refused``, by default
        ``body.<field>[i]``; a 413 is split in halves) and return the refused items with the reason.
        Other errors propagate (the writer retries what is transient)."""
        if not items:
            return []
        try:
            post(items)
            return []
        except ApiError as exc:
            if exc.status not in CONTENT_REFUSALS:
                raise
            reason = f"HTTP {exc.status} {exc.code or 'error'}: {exc.detail}"[:300]
            if exc.status == 413 and len(items) > 1:
                half = len(items) // 2
                return self._post_all_but_refused(
                    post, items[:half], field, refused
                ) + self._post_all_but_refused(post, items[half:], field, refused)
            named = refused(exc, items) if refused else _refused_indexes(exc, field, len(items))
            if not named or len(named) == len(items):
                return [(item, reason) for item in items]
            rest = [item for i, item in enumerate(items) if i not in named]
            dropped = [(items[i], reason) for i in sorted(named)]
            return dropped + self._post_all_but_refused(post, rest, field, refused)

    def _warn_dropped_points(self, dropped: list[tuple[str, str]]) -> None:
        """Log every drop; tell the run once per key (a kind that logs a bad key every step is not a
        warning line per batch)."""
        reasons = dict(dropped)
        new = [key for key in reasons if key not in self._warned_keys]
        n = len(dropped)
        summary = ", ".join(f"{key!a} ({reasons[key]})" for key in (new or list(reasons))[:10])
        message = f"dropped {n} metric point{'s' if n != 1 else ''} the API refuses: {summary}"
        if not new:
            logger.debug("run %s: %s", self.run_id, message)
            return
        if len(self._warned_keys) < 10_000:
            self._warned_keys.update(new)
        self._warn(message + "; the run goes on")

    def _warn(self, message: str) -> None:
        """A logged error, and a warning line in the run's own logs (best effort)."""
        logger.error("run %s: %s", self.run_id, message)
        try:
            self.client.post_logs(self.run_id, [f"{WARNING_PREFIX} {message}"], attempt=self.attempt)
        except ApiError as exc:
            logger.warning("run %s: the warning did not reach the run's logs: %s", self.run_id, exc)

    def is_transient(self, exc: BaseException) -> bool:
        # ValueError/TypeError: a record that cannot be encoded will never go through: permanent
        if isinstance(exc, ValueError | TypeError):
            return False
        return isinstance(exc, ApiUnavailable) or not isinstance(exc, ApiError)


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _param_value(value: Any) -> Any:
    """A logged param's value as the API takes it: text it can store, a non-finite number as its JSON text
    (``NaN``, ``Infinity``: what MLflow showed), in lists and their objects too."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, float) and not math.isfinite(value):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return [_param_value(v) for v in value]
    if isinstance(value, dict):
        return {storable_text(str(k)): _param_value(v) for k, v in value.items()}
    return value


def _json_safe(value: Any) -> Any:
    """A payload with every non-finite float replaced by None (JSON cannot carry NaN or inf)."""
    if isinstance(value, float):
        return _finite_or_none(value)
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value
