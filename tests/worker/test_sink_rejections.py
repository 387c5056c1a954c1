"""A batch the API refuses (4xx) is never retried and never holds up the rest: the API
sink drops the refused points with a logged error and a warning in the run's logs; the valid points and
every later batch go through; a lost lease (409) still fails the run."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from backend.metrics import columns
from reasonlab_sdk import points as compact_points
from reasonlab_sdk.client import Conflict, Invalid, ReasonLabClient
from worker.tracking.sinks import ApiSink
from worker.tracking.writer import MetricPoint, SinkWriter, WriterOptions

FAST = WriterOptions(flush_interval=0.01, flush_at=100, max_batch=4, backoff_initial=0.01, backoff_max=0.02)
RUN = 7


class StrictApi:
    """Refuses (422, naming each item) metric keys containing 'refused-key' and the log line 'refuse me';
    answers 409 while ``lease_lost``."""

    def __init__(self) -> None:
        self.metric_posts: list[list[dict[str, Any]]] = []
        self.log_posts: list[list[str]] = []
        self.lease_lost = False

    def client(self) -> ReasonLabClient:
        return ReasonLabClient("http://api.test", "tok", transport=httpx.MockTransport(self))

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/api/v1")
        if self.lease_lost:
            return httpx.Response(409, json={"detail": "lost", "code": "conflict", "errors": []})
        if path == f"/runs/{RUN}/metrics" and request.headers["content-type"] == compact_points.CONTENT_TYPE:
            # the compact body (what the worker sends), read by the API's own decoder; a refused key is
            # named as the API names a key it refuses in this body: by its place in the body's keys
            batch = columns.decode(request.content, 10_000)
            times = batch.time if batch.time is not None else [None] * len(batch.key)
            points = [
                {"key": batch.keys[k], "step": int(s), "value": float(v), "time": _iso(t)}
                for k, s, v, t in zip(batch.key, batch.step, batch.value, times, strict=True)
            ]
            self.metric_posts.append(points)
            bad = [k for k, key in enumerate(batch.keys) if "refused-key" in key]
            if bad:
                return _invalid([["body", "keys", k] for k in bad])
            return httpx.Response(200, json={"accepted": len(points)})
        body = json.loads(request.content)
        if path == f"/runs/{RUN}/metrics":
            self.metric_posts.append(body["points"])
            bad = [i for i, p in enumerate(body["points"]) if "refused-key" in p["key"]]
            if bad:
                return _invalid([["body", "points", i, "key"] for i in bad])
            return httpx.Response(200, json={"accepted": len(body["points"])})
        if path == f"/runs/{RUN}/logs":
            self.log_posts.append(body["lines"])
            bad = [i for i, line in enumerate(body["lines"]) if line == "refuse me"]
            if bad:
                return _invalid([["body", "lines", i] for i in bad])
            return httpx.Response(204)
        return httpx.Response(404, json={"detail": "no", "code": "not_found", "errors": []})

    @property
    def stored(self) -> list[tuple[str, int]]:
        posts = [p for p in self.metric_posts if not any("refused-key" in q["key"] for q in p)]
        return sorted((q["key"], q["step"]) for p in posts for q in p)

    @property
    def lines(self) -> list[str]:
        return [line for p in self.log_posts if "refuse me" not in p for line in p]


def _iso(micros: Any) -> str | None:
    if micros is None:
        return None
    return datetime.fromtimestamp(int(micros) / 1e6, tz=UTC).isoformat().replace("+00:00", "Z")


def _invalid(locs: list[list[Any]]) -> httpx.Response:
    errors = [{"loc": loc, "msg": "refused", "type": "value_error"} for loc in locs]
    return httpx.Response(422, json={"detail": "refused", "code": "invalid", "errors": errors})


def test_a_client_error_is_raised_after_one_request() -> None:
    api = StrictApi()
    with pytest.raises(Invalid):
        api.client().post_metrics(RUN, [{"key": "refused-key", "step": 1, "value": 1.0}])
    assert len(api.metric_posts) == 1


def test_points_the_api_refuses_are_dropped_and_the_rest_flows(caplog: pytest.LogCaptureFixture) -> None:
    api = StrictApi()
    writer = SinkWriter(ApiSink(api.client(), RUN, attempt=1), FAST)
    with caplog.at_level(logging.ERROR, logger="worker.tracking.sinks"):
        writer.add_metrics([MetricPoint("loss", 1, 1.0, 0.0), MetricPoint("refused-key/x", 1, 2.0, 0.0)])
        assert writer.flush(10)
        writer.add_metrics([MetricPoint("loss", s, 1.0, 0.0) for s in range(2, 10)])
        assert writer.close(10)
    assert writer.errors == []
    assert api.stored == [("loss", s) for s in range(1, 10)]
    # refused once, the rest of that batch re-sent once, then two batches of 4: no retry of the 4xx
    assert [len(p) for p in api.metric_posts] == [2, 1, 4, 4]
    assert (
        len(api.lines) == 1 and "dropped 1 metric point" in api.lines[0] and "refused-key/x" in api.lines[0]
    )
    assert [r.levelno for r in caplog.records] == [logging.ERROR]


def test_keys_the_api_would_refuse_never_leave_the_worker() -> None:
    api = StrictApi()
    writer = SinkWriter(ApiSink(api.client(), RUN, attempt=1), WriterOptions(flush_interval=0.01))
    bad_keys = ["", "_private", "k" * 251, "nul\x00", "lone\ud800", "\udc00x"]
    writer.add_metrics([MetricPoint(k, 1, 1.0, 0.0) for k in bad_keys] + [MetricPoint("ok", 1, 1.0, 0.0)])
    assert writer.close(10)
    assert writer.errors == []
    assert api.metric_posts == [[{"key": "ok", "step": 1, "value": 1.0, "time": "1970-01-01T00:00:00Z"}]]
    assert len(api.lines) == 1 and f"dropped {len(bad_keys)} metric points" in api.lines[0]
    # the warning names the keys as escapes: it is storable itself
    assert "\x00" not in api.lines[0] and "\\x00" in api.lines[0]


def test_steps_the_api_would_refuse_never_leave_the_worker() -> None:
    """A step below 0 or past the API's largest (2**62; past int64 the compact body cannot hold it at all)
    is dropped before the post, however many there are: one post carries the rest."""
    api = StrictApi()
    writer = SinkWriter(ApiSink(api.client(), RUN, attempt=1), WriterOptions(flush_interval=0.01))
    bad = [MetricPoint("loss", s, 1.0, 0.0) for s in [-1, 2**62 + 1, 2**63, 2**70] * 50]
    writer.add_metrics([*bad, MetricPoint("loss", 5, 1.0, 0.0)])
    assert writer.close(10)
    assert writer.errors == []
    assert api.stored == [("loss", 5)] and len(api.metric_posts) == 1
    assert len(api.lines) == 1 and f"dropped {len(bad)} metric points" in api.lines[0]


def test_a_refused_log_line_is_dropped_and_the_others_arrive() -> None:
    api = StrictApi()
    writer = SinkWriter(ApiSink(api.client(), RUN, attempt=1), FAST)
    writer.add_logs(["one", "refuse me", "two", "nul \x00 and lone \ud800 are escaped"])
    assert writer.close(10)
    assert writer.errors == []
    assert api.lines[:3] == ["one", "two", "nul \\x00 and lone \\ud800 are escaped"]
    assert "dropped 1 log line" in api.lines[3]


def test_a_lost_lease_still_fails_the_run() -> None:
    api = StrictApi()
    api.lease_lost = True
    writer = SinkWriter(ApiSink(api.client(), RUN, attempt=1), FAST)
    writer.add_metrics([MetricPoint("loss", 1, 1.0, 0.0)])
    writer.close(10)
    assert len(writer.errors) == 1 and isinstance(writer.errors[0], Conflict)


def test_free_text_leaves_the_worker_storable() -> None:
    """A traceback or a progress message with a NUL or a lone surrogate would be refused (422) and cost
    the run its finish or its heartbeats: the SDK escapes them instead."""
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        if request.url.path.endswith("/heartbeat"):
            return httpx.Response(200, json={"cancel_requested": False})
        return httpx.Response(200, json={"id": RUN})

    client = ReasonLabClient("http://api.test", "tok", transport=httpx.MockTransport(handler))
    progress = {"done": 1, "total": 2, "message": "step \x00 \ud800"}
    client.heartbeat(RUN, 1, progress)
    client.finish(RUN, 1, "failed", error="Traceback: b'\x00\xff' \udcff", progress=progress)
    assert bodies[0]["progress"]["message"] == "step \\x00 \\ud800"
    assert bodies[1]["error"] == "Traceback: b'\\x00\xff' \\udcff"
    assert bodies[1]["progress"]["message"] == "step \\x00 \\ud800"
    assert progress["message"] == "step \x00 \ud800"  # the caller's dict is left alone
