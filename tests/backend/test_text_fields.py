"""Text that no database stores: a NUL character or a lone UTF-16 surrogate in any text
field is a 422 naming the field, on every route and on both databases, never a 500; the worker's metric
sink drops a refused batch with a warning and keeps sending the rest."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest

from reasonlab_sdk import ReasonLabClient
from tests.backend.conftest import Api
from worker.tracking.sinks import ApiSink
from worker.tracking.writer import MetricPoint, SinkWriter, WriterOptions

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)

NUL = "a\x00b"
LONE = "a\ud800b"
LOW_FIRST = "\ude00\ud83d"  # a pair in the wrong order is two lone surrogates


def _post(api: Api, method: str, path: str, body: Any, headers: dict[str, str]) -> Any:
    # json.dumps escapes (ensure_ascii): a NUL arrives as \u0000 and a surrogate as \ud800, as a prober sends them
    return api.client.request(
        method,
        path,
        content=json.dumps(body).encode(),
        headers={**headers, "content-type": "application/json"},
    )


def _refused(response: Any, loc: list[Any]) -> None:
    assert response.status_code == 422, (loc, response.status_code, response.text[:300])
    body = response.json()
    assert body["code"] == "invalid"
    assert loc in [e["loc"] for e in body["errors"]], (loc, body)


def test_every_text_field_refuses_nul_and_lone_surrogates(api: Api) -> None:
    run = api.submit({}).json()["runs"][0]
    rid, eid = run["id"], run["experiment_id"]
    experiment = {"name": "ok", "kind": "diagnostic", "spec": {}}
    cases: list[tuple[str, str, Any, dict[str, str], list[Any]]] = []
    for bad in (NUL, LONE, LOW_FIRST):
        point = {"key": "loss", "step": 1, "value": 1.0}
        cases += [
            (
                "POST",
                f"/api/v1/runs/{rid}/metrics",
                {"points": [point, {**point, "key": bad}]},
                api.worker,
                ["body", "points", 1, "key"],
            ),
            ("POST", f"/api/v1/runs/{rid}/logs", {"lines": ["fine", bad]}, api.worker, ["body", "lines", 1]),
            ("POST", "/api/v1/experiments", {**experiment, "name": bad}, api.h(), ["body", "name"]),
            (
                "POST",
                "/api/v1/experiments",
                {**experiment, "description": bad},
                api.h(),
                ["body", "description"],
            ),
            ("POST", "/api/v1/experiments", {**experiment, "tags": ["x", bad]}, api.h(), ["body", "tags", 1]),
            ("POST", "/api/v1/experiments", {**experiment, "project": bad}, api.h(), ["body", "project"]),
            (
                "POST",
                "/api/v1/experiments",
                {**experiment, "spec": {"train": {"optimizer": bad}}},
                api.h(),
                ["body", "spec", "train", "optimizer"],
            ),
            ("POST", "/api/v1/experiments/preview", {**experiment, "kind": bad}, api.h(), ["body", "kind"]),
            ("POST", f"/api/v1/experiments/{eid}/comments", {"body": bad}, api.h(), ["body", "body"]),
            ("POST", f"/api/v1/runs/{rid}/comments", {"body": bad}, api.h(), ["body", "body"]),
            (
                "PUT",
                f"/api/v1/experiments/{eid}/review",
                {"state": "approved", "body": bad},
                api.h(),
                ["body", "body"],
            ),
            ("POST", "/api/v1/projects", {"name": "p", "description": bad}, api.h(), ["body", "description"]),
            ("POST", "/api/v1/projects", {"name": bad}, api.h(), ["body", "name"]),
            (
                "PUT",
                "/api/v1/projects/1/members",
                {"username": bad, "role": "viewer"},
                api.h(),
                ["body", "username"],
            ),
            ("POST", "/api/v1/auth/login", {"username": bad, "password": "x"}, {}, ["body", "username"]),
            ("POST", "/api/v1/auth/login", {"username": "admin", "password": bad}, {}, ["body", "password"]),
            ("POST", "/api/v1/auth/tokens", {"name": bad}, api.h(), ["body", "name"]),
            (
                "POST",
                f"/api/v1/runs/{rid}/results",
                {"kind": "diagnostic", "payload": {"final_loss": 0.1, "note": bad}},
                api.worker,
                ["body", "payload", "note"],
            ),
            (
                "POST",
                f"/api/v1/runs/{rid}/claim",
                {"attempt": 1, "worker": bad},
                api.worker,
                ["body", "worker"],
            ),
            (
                "POST",
                f"/api/v1/runs/{rid}/finish",
                {"attempt": 1, "status": "failed", "error": bad},
                api.worker,
                ["body", "error"],
            ),
            (
                "POST",
                f"/api/v1/runs/{rid}/heartbeat",
                {"attempt": 1, "progress": {"message": bad}},
                api.worker,
                ["body", "progress", "message"],
            ),
            ("PATCH", f"/api/v1/runs/{rid}", {"mlflow_run_id": bad}, api.worker, ["body", "mlflow_run_id"]),
        ]
    for method, path, body, headers, loc in cases:
        _refused(_post(api, method, path, body, headers), loc)
    # a key of a free-form object is a field name too
    r = _post(api, "POST", "/api/v1/experiments", {**experiment, "spec": {NUL: 1}}, api.h())
    assert r.status_code == 422 and r.json()["errors"][0]["loc"][:2] == ["body", "spec"]
    # nothing was stored by any of them
    assert api.client.get(f"/api/v1/runs/{rid}/metric-keys", headers=api.h()).json() == []
    assert api.client.get(f"/api/v1/runs/{rid}/logs", headers=api.h()).json()["items"] == []
    assert len(api.client.get("/api/v1/experiments", headers=api.h()).json()["items"]) == 1
    assert api.client.get(f"/api/v1/runs/{rid}", headers=api.h()).json()["status"] == "queued"


def test_query_and_path_parameters_refuse_nul(api: Api) -> None:
    r = api.client.get("/api/v1/runs?tag=a%00b", headers=api.h())
    _refused(r, ["query", "tag"])
    r = api.client.get("/api/v1/experiments?kind=%00", headers=api.h())
    _refused(r, ["query", "kind"])
    r = api.client.get("/api/v1/runs/1/metrics?keys=loss,a%00", headers=api.worker)
    _refused(r, ["query", "keys"])
    run = api.submit({}).json()["runs"][0]
    r = api.client.put(f"/api/v1/runs/{run['id']}/tags/a%00b", headers=api.h())
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["path", "tag"]


def test_valid_escapes_and_pairs_are_stored_as_sent(api: Api) -> None:
    text = "emoji \U0001f600, a literal backslash-u0000: \\u0000, tab\t, \u00e9"
    r = _post(
        api, "POST", "/api/v1/experiments", {"name": text, "kind": "diagnostic", "description": text}, api.h()
    )
    assert r.status_code == 201, r.text
    assert b"\\ud83d\\ude00" in json.dumps({"name": text}).encode()  # it did go out as an escaped pair
    got = api.client.get(f"/api/v1/experiments/{r.json()['id']}", headers=api.h()).json()
    assert got["name"] == text and got["description"] == text
    rid = got["runs"][0]["id"]
    lines = [text, "\\u0000 is six characters"]
    assert _post(api, "POST", f"/api/v1/runs/{rid}/logs", {"lines": lines}, api.worker).status_code == 204
    items = api.client.get(f"/api/v1/runs/{rid}/logs", headers=api.h()).json()["items"]
    assert [i["line"] for i in items] == lines


def test_the_metric_sink_drops_a_refused_batch_and_sends_the_next(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    """Against the real API: a batch with a NUL key is dropped with a logged error and a warning line in
    the run's logs; the valid points of it and every later batch arrive; nothing is retried."""
    rid = api.submit({}).json()["runs"][0]["id"]

    def forward(request: httpx.Request) -> httpx.Response:  # the SDK's httpx, through the TestClient
        r = api.client.request(
            request.method, request.url.raw_path.decode(), content=request.read(), headers=request.headers
        )
        return httpx.Response(r.status_code, headers=r.headers, content=r.content)

    client = ReasonLabClient(
        "http://testserver", api.worker["Authorization"].split()[1], transport=httpx.MockTransport(forward)
    )
    sent: list[str] = []
    original = client.request

    def counting(method: str, path: str, **kw: Any) -> Any:
        sent.append(path)
        return original(method, path, **kw)

    client.request = counting  # type: ignore[method-assign]
    sink = ApiSink(client, rid)
    writer = SinkWriter(sink, WriterOptions(flush_interval=0.01, max_batch=3, backoff_initial=0.01))
    with caplog.at_level(logging.ERROR):
        writer.add_metrics([MetricPoint("loss", 1, 1.0, 0.0), MetricPoint("bad\x00key", 1, 2.0, 0.0)])
        assert writer.flush(10)
        writer.add_metrics([MetricPoint("loss", s, float(s), 0.0) for s in range(2, 8)])
        assert writer.close(10)
    assert writer.errors == []  # nothing that fails the run
    series = api.client.get(f"/api/v1/runs/{rid}/metrics?keys=loss", headers=api.h()).json()["series"]
    assert series["loss"]["total_points"] == 7
    assert api.client.get(f"/api/v1/runs/{rid}/metric-keys", headers=api.h()).json() == ["loss"]
    lines = [i["line"] for i in api.client.get(f"/api/v1/runs/{rid}/logs", headers=api.h()).json()["items"]]
    assert len(lines) == 1 and "dropped 1 metric point" in lines[0] and "bad\\x00key" in lines[0]
    assert any("dropped" in r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR)
    assert sent.count(f"/runs/{rid}/metrics") == 3  # the bad point never left; no request was repeated
