"""The typed API client: URLs, credentials, error classes by status, cursors, server-sent events."""

from __future__ import annotations

import json

import httpx
import pytest

from reasonlab_sdk.client import (
    ApiUnavailable,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    ReasonLabClient,
    TooLarge,
    Unauthorized,
    api_base_url,
    parse_sse,
)


def _client(handler) -> ReasonLabClient:  # type: ignore[no-untyped-def]
    return ReasonLabClient("http://api.test/", "tok", transport=httpx.MockTransport(handler))


def test_base_url_accepts_server_or_api_root() -> None:
    assert api_base_url("http://h:8000") == "http://h:8000/api/v1"
    assert api_base_url("http://h:8000/api/v1/") == "http://h:8000/api/v1"


def test_requests_carry_bearer_token_and_drop_empty_query_params() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"items": [], "next_cursor": None})

    _client(handler).list_runs(experiment_id=4, status=None, sort="metric:loss")
    assert seen[0].headers["authorization"] == "Bearer tok"
    assert seen[0].url.path == "/api/v1/runs"
    assert dict(seen[0].url.params) == {"experiment_id": "4", "sort": "metric:loss"}


def test_login_switches_to_the_returned_jwt() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/auth/login"):
            assert json.loads(request.content) == {"username": "ada", "password": "pw"}
            return httpx.Response(
                200, json={"access_token": "jwt-1", "token_type": "bearer", "expires_at": "x"}
            )
        return httpx.Response(
            200, json={"id": 1, "username": "ada", "authorization": request.headers["authorization"]}
        )

    client = ReasonLabClient("http://api.test", transport=httpx.MockTransport(handler))
    client.login("ada", "pw")
    assert client.me()["authorization"] == "Bearer jwt-1"


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        (401, Unauthorized),
        (403, Forbidden),
        (404, NotFound),
        (409, Conflict),
        (413, TooLarge),
        (422, Invalid),
    ],
)
def test_error_status_maps_to_typed_error(status: int, error_class: type[Exception]) -> None:
    errors = [{"loc": ["body", "spec", "train", "lr"], "msg": "must be > 0", "type": "greater_than"}]

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json={"detail": "nope", "code": "some_code", "errors": errors})

    with pytest.raises(error_class) as info:
        _client(handler).get_run(1)
    assert info.value.status == status  # type: ignore[attr-defined]
    assert info.value.code == "some_code"  # type: ignore[attr-defined]
    assert info.value.detail == "nope"  # type: ignore[attr-defined]
    assert info.value.errors == errors  # type: ignore[attr-defined]
    assert not isinstance(info.value, ApiUnavailable)


@pytest.mark.parametrize("status", [500, 502, 503, 429])
def test_server_errors_are_unavailable_and_retryable(status: int) -> None:
    with pytest.raises(ApiUnavailable) as info:
        _client(lambda request: httpx.Response(status, text="boom")).health()
    assert info.value.status == status


def test_connection_error_is_unavailable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(ApiUnavailable) as info:
        _client(handler).claim(1, 1, "w")
    assert info.value.status is None


def test_fastapi_style_422_detail_list_becomes_errors() -> None:
    detail = [{"loc": ["body", "attempt"], "msg": "field required", "type": "missing"}]
    with pytest.raises(Invalid) as info:
        _client(lambda request: httpx.Response(422, json={"detail": detail})).heartbeat(1, 1)
    assert info.value.errors == detail


def test_worker_calls_send_the_documented_bodies() -> None:
    bodies: dict[str, object] = {}

    def handler(request: httpx.Request) -> httpx.Response:
        bodies[f"{request.method} {request.url.path.removeprefix('/api/v1')}"] = json.loads(
            request.content or b"null"
        )
        if request.url.path.endswith("/metrics"):
            return httpx.Response(200, json={"accepted": 2})
        return httpx.Response(200, json={})

    client = _client(handler)
    client.claim(5, 2, "host:1")
    client.heartbeat(5, 2, {"done": 1, "total": 4, "message": ""})
    assert (
        client.post_metrics(
            5, [{"key": "loss", "step": 1, "value": 0.5}, {"key": "loss", "step": 2, "value": 0.4}]
        )
        == 2
    )
    client.post_results(5, "diagnostic", {"final_loss": 0.1})
    client.post_logs(5, ["a", "b"])
    client.patch_run(5, mlflow_run_id="abc")
    client.finish(5, 2, "failed", error="Traceback ...")
    assert bodies == {
        "POST /runs/5/claim": {"attempt": 2, "worker": "host:1"},
        "POST /runs/5/heartbeat": {"attempt": 2, "progress": {"done": 1, "total": 4, "message": ""}},
        "POST /runs/5/metrics": {
            "points": [{"key": "loss", "step": 1, "value": 0.5}, {"key": "loss", "step": 2, "value": 0.4}]
        },
        "POST /runs/5/results": {"kind": "diagnostic", "payload": {"final_loss": 0.1}},
        "POST /runs/5/logs": {"lines": ["a", "b"]},
        "PATCH /runs/5": {"mlflow_run_id": "abc"},
        "POST /runs/5/finish": {"attempt": 2, "status": "failed", "error": "Traceback ..."},
    }


def test_iter_runs_follows_the_cursor() -> None:
    pages = {
        None: {"items": [{"id": 1}, {"id": 2}], "next_cursor": "c2"},
        "c2": {"items": [{"id": 3}], "next_cursor": None},
    }

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=pages[request.url.params.get("cursor")])

    assert [run["id"] for run in _client(handler).iter_runs(status="queued")] == [1, 2, 3]


def test_get_metrics_joins_keys() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.params["keys"] == "loss,acc"
        assert request.url.params["max_points"] == "50"
        return httpx.Response(200, json={"run_id": 1, "series": {}})

    assert _client(handler).get_metrics(1, ["loss", "acc"], max_points=50)["series"] == {}


def test_parse_sse_decodes_events_and_skips_comments() -> None:
    lines = [
        ": keep-alive",
        "event: progress",
        'data: {"done": 3, "total": 10}',
        "",
        "event: end",
        "data: {}",
        "",
    ]
    events = list(parse_sse(iter(lines)))
    assert [(e.event, e.data) for e in events] == [("progress", {"done": 3, "total": 10}), ("end", {})]


def test_events_stream_stops_at_end() -> None:
    body = 'event: status\ndata: {"status": "running"}\n\nevent: end\ndata: {}\n\nevent: status\ndata: {}\n\n'

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["accept"] == "text/event-stream"
        return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})

    assert [e.event for e in _client(handler).events(9)] == ["status", "end"]
