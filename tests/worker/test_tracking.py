"""Buffered tracking (nothing dropped while a sink is down) and atomic checkpoints (keep the last 2)."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import torch
from pydantic import ValidationError

from worker.tracking import (
    MetricPoint,
    Sink,
    TrackedRunContext,
    TrackingError,
    WriterOptions,
    load_checkpoint_file,
    save_checkpoint_file,
)

FAST = WriterOptions(flush_interval=0.05, flush_at=100, max_batch=700, backoff_initial=0.01, backoff_max=0.05)


class FlakySink(Sink):
    """Records what it is given; fails (transiently) for its first ``failures`` writes."""

    name = "flaky"

    def __init__(self, failures: int = 0, *, required: bool = True, transient: bool = True) -> None:
        self.failures = failures
        self.required = required
        self.transient = transient
        self.flush_deadline = 10.0
        self.lock = threading.Lock()
        self.points: list[MetricPoint] = []
        self.batches: list[int] = []
        self.params: list[dict[str, Any]] = []
        self.results: list[tuple[str, dict[str, Any]]] = []
        self.lines: list[str] = []
        self.failed = 0
        self.finished: str | None = None

    def _maybe_fail(self) -> None:
        with self.lock:
            if self.failed < self.failures:
                self.failed += 1
                raise ConnectionError("sink down")

    def write_params(self, params: dict[str, Any]) -> None:
        self._maybe_fail()
        self.params.append(params)

    def write_metrics(self, points: Sequence[MetricPoint]) -> None:
        self._maybe_fail()
        self.batches.append(len(points))
        self.points.extend(points)

    def write_result(self, kind: str, payload: dict[str, Any]) -> None:
        self._maybe_fail()
        self.results.append((kind, payload))

    def write_logs(self, lines: Sequence[str]) -> None:
        self._maybe_fail()
        self.lines.extend(lines)

    def finish(self, status: Any) -> None:
        self.finished = status

    def is_transient(self, exc: BaseException) -> bool:
        return self.transient


def _context(tmp_path: Path, *sinks: Sink) -> TrackedRunContext:
    return TrackedRunContext(
        seed=0,
        device="cpu",
        out_dir=tmp_path / "out",
        checkpoint_dir=tmp_path / "ckpt",
        sinks=sinks,
        options=FAST,
    )


def test_metric_buffer_never_drops_points_while_sink_fails_then_recovers(tmp_path: Path) -> None:
    sink = FlakySink(failures=12)
    ctx = _context(tmp_path, sink)
    for step in range(1, 2501):
        ctx.log_metrics({"loss": 1.0 / step, "acc": step / 2500}, step)
        if step % 500 == 0:
            time.sleep(0.02)  # let the writer try (and fail) while points keep coming
    ctx.log("a line")
    ctx.close("succeeded")
    assert sink.failed == 12
    got = sorted((p.key, p.step, p.value) for p in sink.points)
    want = sorted(
        [("loss", s, 1.0 / s) for s in range(1, 2501)] + [("acc", s, s / 2500) for s in range(1, 2501)]
    )
    assert got == want  # every point exactly once, in spite of 12 failed writes
    assert max(sink.batches) <= FAST.max_batch
    assert sink.lines == ["a line"]
    assert sink.finished == "succeeded"


def test_metrics_flush_in_background_without_close(tmp_path: Path) -> None:
    sink = FlakySink()
    ctx = _context(tmp_path, sink)
    ctx.log_metrics({"loss": 0.5}, 1)
    deadline = time.monotonic() + 5
    while not sink.points and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [(p.key, p.step) for p in sink.points] == [("loss", 1)]
    ctx.close("succeeded")


def test_save_checkpoint_flushes_every_earlier_point_first(tmp_path: Path) -> None:
    sink = FlakySink(failures=3)
    ctx = _context(tmp_path, sink)
    for step in range(1, 51):
        ctx.log_metrics({"loss": float(step)}, step)
    ctx.save_checkpoint({"w": torch.ones(2)}, 50)
    assert sorted(p.step for p in sink.points) == list(range(1, 51))  # persisted before the checkpoint
    ctx.close("succeeded")


def test_permanent_sink_error_fails_close(tmp_path: Path) -> None:
    ctx = _context(tmp_path, FlakySink(failures=1, transient=False))
    ctx.log_metrics({"loss": 1.0}, 1)
    with pytest.raises(TrackingError, match="flaky"):
        ctx.close("succeeded")


def test_mirror_sink_failure_never_fails_the_run(tmp_path: Path) -> None:
    primary, mirror = FlakySink(), FlakySink(failures=1_000_000, required=False)
    mirror.flush_deadline = 0.2
    ctx = _context(tmp_path, primary, mirror)
    ctx.log_metrics({"loss": 1.0}, 1)
    ctx.save_checkpoint({"step": 1}, 1)
    ctx.close("succeeded")
    assert [p.step for p in primary.points] == [1]
    assert primary.finished == "succeeded"


def test_log_result_validates_known_result_kinds_at_once(tmp_path: Path) -> None:
    sink = FlakySink()
    ctx = _context(tmp_path, sink)
    with pytest.raises(ValidationError):
        ctx.log_result({"kind": "diagnostic", "final_loss": "not a number"})
    ctx.log_result(
        {"kind": "diagnostic", "final_loss": 0.1, "initial_loss": 1.0, "steps": 3, "parameters": 9}
    )
    ctx.log_params({"train": {"lr": 0.1}})
    ctx.close("succeeded")
    assert sink.results[0][0] == "diagnostic"
    assert sink.results[0][1]["resumed_from_step"] is None
    assert sink.params == [{"train": {"lr": 0.1}}]


def test_checkpoints_keep_the_last_two_and_load_the_newest(tmp_path: Path) -> None:
    for step in (10, 20, 30):
        save_checkpoint_file(tmp_path, {"w": torch.full((3,), float(step))}, step)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step-20.pt", "step-30.pt"]
    loaded = load_checkpoint_file(tmp_path)
    assert loaded is not None
    state, step = loaded
    assert step == 30 and torch.equal(state["w"], torch.full((3,), 30.0))


def test_no_checkpoint_loads_none(tmp_path: Path) -> None:
    assert load_checkpoint_file(tmp_path / "missing") is None


def test_checkpoint_write_is_atomic_when_save_crashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_checkpoint_file(tmp_path, {"w": torch.zeros(2)}, 10)

    def crashing_save(obj: Any, f: Any) -> None:
        f.write(b"half a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", crashing_save)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint_file(tmp_path, {"w": torch.ones(2)}, 20)
    assert [p.name for p in tmp_path.iterdir()] == ["step-10.pt"]  # no partial file, no temp file
    loaded = load_checkpoint_file(tmp_path)
    assert loaded is not None and loaded[1] == 10


def test_unreadable_newest_checkpoint_falls_back_to_the_previous(tmp_path: Path) -> None:
    save_checkpoint_file(tmp_path, {"v": 1}, 1)
    (tmp_path / "step-2.pt").write_bytes(b"garbage")
    loaded = load_checkpoint_file(tmp_path)
    assert loaded == ({"v": 1}, 1)


def test_api_sink_keeps_a_results_key_across_retries_and_names_its_attempt() -> None:
    from reasonlab_sdk.client import ApiUnavailable
    from worker.tracking import ApiSink

    class Client:
        def __init__(self) -> None:
            self.calls: list[tuple[str, str | None, int | None]] = []
            self.fail_next = True

        def post_results(
            self, run_id: int, kind: str, payload: dict, *, key: str | None = None, attempt: int | None = None
        ) -> dict:
            self.calls.append((kind, key, attempt))
            if self.fail_next:
                self.fail_next = False
                raise ApiUnavailable("down", status=503)
            return {}

    client = Client()
    sink = ApiSink(client, run_id=1, attempt=2)  # type: ignore[arg-type]
    first = {"x": 1.0}
    with pytest.raises(ApiUnavailable):
        sink.write_result("diagnostic", first)
    sink.write_result("diagnostic", first)  # the writer retries the same record
    sink.write_result("diagnostic", {"x": float("nan")})
    assert client.calls == [
        ("diagnostic", "diagnostic:0", 2),
        ("diagnostic", "diagnostic:0", 2),
        ("diagnostic", "diagnostic:1", 2),
    ]


def test_api_sink_sends_nan_and_infinities_as_their_json_strings() -> None:
    """JSON has no NaN or inf: the worker's points carry "NaN", "Infinity", "-Infinity", which the metric
    route stores as those values (a null would be a gap), in a JSON body as in the compact one the sink
    asks for (encoded here as the client would)."""
    from reasonlab_sdk import points as compact_points
    from worker.tracking import ApiSink

    class Client:
        def __init__(self) -> None:
            self.sent: list[dict] = []

        def post_metrics(
            self, run_id: int, points: list[dict], *, attempt: int | None = None, compact: bool = False
        ) -> int:
            assert compact  # the compact body: ~10x less of the API's time than JSON objects
            json.dumps(points, allow_nan=False)  # strict JSON, the body an API without the compact one gets
            compact_points.encode(points, attempt)
            self.sent.extend(points)
            return len(points)

    client = Client()
    sink = ApiSink(client, run_id=1, attempt=1)  # type: ignore[arg-type]
    sink.write_metrics(
        [
            MetricPoint("loss", s, v, 1_700_000_000.0)
            for s, v in enumerate([0.5, math.nan, math.inf, -math.inf])
        ]
    )
    assert [p["value"] for p in client.sent] == [0.5, "NaN", "Infinity", "-Infinity"]
