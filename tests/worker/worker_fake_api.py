"""An in-memory stand-in for the worker routes of docs/api.md, served through httpx.MockTransport.

It keeps what a worker sent (claims, heartbeats, metrics by (key, step), results, logs, logged params,
finishes) and can misbehave on demand: refuse claims, request a cancel, lose the lease, or be unreachable.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

import httpx

from backend.metrics import columns
from reasonlab_sdk import points as compact_points
from reasonlab_sdk.client import ReasonLabClient


def _body(request: httpx.Request) -> dict[str, Any]:
    """The request's JSON body, or a compact metric body (what the worker sends) read by the API's own
    decoder into the JSON body's shape."""
    if request.headers.get("content-type") == compact_points.CONTENT_TYPE:
        batch = columns.decode(request.content, 1_000_000)
        points = [
            {"key": batch.keys[k], "step": int(step), "value": None if gap else float(value)}
            for k, step, value, gap in zip(batch.key, batch.step, batch.value, batch.gap, strict=True)
        ]
        return {"points": points, "attempt": batch.attempt}
    return json.loads(request.content) if request.content else {}


class FakeApi:
    def __init__(self, run_id: int = 7, spec: dict[str, Any] | None = None, kind: str = "diagnostic") -> None:
        self.lock = threading.Lock()
        self.run: dict[str, Any] = {
            "id": run_id,
            "experiment_id": 3,
            "project_id": 1,
            "kind": kind,
            "index": 0,
            "spec": spec or {},
            "params": {"seed": 0},
            "status": "queued",
            "attempt": 1,
            "max_attempts": 3,
            "released": 0,
            "mlflow_run_id": None,
            "cancel_requested": False,
        }
        self.metrics: dict[tuple[str, int], float] = {}
        self.metric_posts = 0
        self.results: list[dict[str, Any]] = []
        self.logs: list[str] = []
        self.params: dict[str, Any] = {}  # the run's logged_params (flattened, merged)
        self.param_posts: list[dict[str, Any]] = []
        self.heartbeats: list[dict[str, Any]] = []
        self.finishes: list[dict[str, Any]] = []
        self.patches: list[dict[str, Any]] = []
        self.resumed: list[dict[str, Any]] = []  # POST /runs/{id}/resumed: {attempt, step}
        self.run_tokens_seen: set[str] = set()
        self.secrets: dict[str, str] = {}  # what the API hands this run (the names its spec holds)
        self.secret_hosts: dict[str, list[str]] = {}  # where each may be sent (none listed: nowhere)
        self.datasets: dict[str, bytes] = {}  # the datasets this run's spec names, as the API hands them
        self.requests: list[str] = []
        # the artifact store: (run id, path) -> bytes, as the API's store keeps them
        self.artifacts: dict[tuple[int, str], bytes] = {}
        # misbehaviour
        self.lease_lost = False
        self.fail_metric_posts = 0  # the next n metric posts answer 503
        self.unreachable_metric_posts = 0  # the next n metric posts raise a connection error

    def client(self) -> ReasonLabClient:
        return ReasonLabClient(
            "http://api.test", "worker-token", timeout=5, transport=httpx.MockTransport(self)
        )

    def run_client(self, attempt: int = 1) -> ReasonLabClient:
        """A client with the run token the claim of ``attempt`` hands out (what a run's context uses)."""
        return self.client().with_token(f"run-token-{attempt}")

    def check_token(self, request: httpx.Request, *, worker: bool) -> None:
        """The claim takes the worker token; everything after it the run token the claim handed out (the
        real API also refuses a token of another attempt: tests/backend/test_run_tokens.py)."""
        auth = request.headers["authorization"]
        if worker:
            assert auth == "Bearer worker-token", auth
        else:
            assert auth.startswith("Bearer run-token-"), f"{request.url.path} called with {auth}"
            self.run_tokens_seen.add(auth.removeprefix("Bearer "))

    def requeue(self, attempt: int) -> None:
        """What the reaper or a retry does: back to queued with a new attempt."""
        with self.lock:
            self.run.update(status="queued", attempt=attempt, cancel_requested=False)
            self.lease_lost = False

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/api/v1")
        if "/artifacts" in path:
            return self._artifacts(request, path)
        body = _body(request)
        is_claim = request.method == "POST" and path.endswith("/claim")
        self.check_token(request, worker=is_claim)
        with self.lock:
            self.requests.append(f"{request.method} {path}")
            run_path = f"/runs/{self.run['id']}"
            if request.method == "POST" and path == f"{run_path}/claim":
                attempt = body["attempt"] if body.get("attempt") is not None else self.run["attempt"]
                if self.run["status"] != "queued" or attempt != self.run["attempt"]:
                    return _error(409, "conflict", "the run is not queued with that attempt")
                self.run.update(status="running", worker=body["worker"])
                return httpx.Response(200, json={**self.run, "run_token": f"run-token-{attempt}"})
            if request.method == "POST" and path == f"{run_path}/heartbeat":
                self.heartbeats.append(body)
                if self.lease_lost or body["attempt"] != self.run["attempt"]:
                    return _error(409, "conflict", "the attempt no longer owns the run")
                return httpx.Response(200, json={"cancel_requested": self.run["cancel_requested"]})
            if request.method == "POST" and path == f"{run_path}/metrics":
                if self.unreachable_metric_posts:
                    self.unreachable_metric_posts -= 1
                    raise httpx.ConnectError("connection refused", request=request)
                if self.fail_metric_posts:
                    self.fail_metric_posts -= 1
                    return _error(503, "unavailable", "the database is restarting")
                points = body["points"]
                if len(points) > 10_000:
                    return _error(413, "too_large", "more than 10,000 points")
                self.metric_posts += 1
                for point in points:
                    self.metrics[(point["key"], point["step"])] = point["value"]
                return httpx.Response(200, json={"accepted": len(points)})
            if request.method == "POST" and path == f"{run_path}/results":
                self.results.append(body)
                return httpx.Response(201, json={"id": len(self.results), "run_id": self.run["id"], **body})
            if request.method == "POST" and path == f"{run_path}/params":
                return self._params(body)
            if request.method == "POST" and path == f"{run_path}/logs":
                self.logs.extend(body["lines"])
                return httpx.Response(200, json={"accepted": len(body["lines"])})
            if request.method == "PATCH" and path == run_path:
                self.patches.append(body)
                self.run.update(body)
                return httpx.Response(200, json=self.run)
            if request.method == "POST" and path == f"{run_path}/finish":
                if self.run["status"] != "running" or body["attempt"] != self.run["attempt"]:
                    return _error(409, "conflict", "not running with that attempt")
                self.finishes.append(body)
                self.run["status"] = body["status"]
                return httpx.Response(200, json=self.run)
            if request.method == "POST" and path == f"{run_path}/resumed":
                if self.run["status"] != "running" or body["attempt"] != self.run["attempt"]:
                    return _error(409, "conflict", "not running with that attempt")
                self.resumed.append(body)
                return httpx.Response(204)
            if request.method == "POST" and path == f"{run_path}/release":
                if self.run["status"] != "running" or body["attempt"] != self.run["attempt"]:
                    return _error(409, "conflict", "not running with that attempt")
                # as the API does: the next attempt, the released one counted apart (not in max_attempts)
                self.run.update(
                    status="queued", attempt=body["attempt"] + 1, released=self.run["released"] + 1
                )
                return httpx.Response(200, json=self.run)
            if request.method == "GET" and path == run_path:
                return httpx.Response(200, json=self.run)
            if request.method == "GET" and path.startswith(f"{run_path}/secrets/"):
                name = path.rsplit("/", 1)[1]
                if name not in self.secrets:
                    return _error(403, "forbidden", f"the run's spec names no secret {name!r}")
                hosts = self.secret_hosts.get(name, [])
                return httpx.Response(200, json={"name": name, "value": self.secrets[name], "hosts": hosts})
            if request.method == "GET" and path.startswith(f"{run_path}/datasets/"):
                name = path.rsplit("/", 1)[1]
                if name not in self.datasets:
                    return _error(403, "forbidden", f"the run's spec names no dataset {name!r}")
                data = self.datasets[name]
                digest = hashlib.sha256(data).hexdigest()
                return httpx.Response(200, content=data, headers={"X-Checksum-Sha256": digest})
            if request.method == "GET" and path == f"{run_path}/metric-keys":
                return httpx.Response(200, json=sorted({key for key, _ in self.metrics}))
            if request.method == "GET" and path == f"{run_path}/metrics":
                return httpx.Response(200, json=self._series(request.url.params))
            return _error(404, "not_found", f"no route {request.method} {path}")

    def _params(self, body: dict[str, Any]) -> httpx.Response:
        """POST /runs/{id}/params: flat keys (the SDK flattens), values of at most 10,000 characters."""
        if body.get("attempt") is not None and (
            self.run["status"] != "running" or body["attempt"] != self.run["attempt"]
        ):
            return _error(409, "conflict", "the attempt no longer owns the run")
        params = body["params"]
        errors = [
            {"loc": ["body", "params", key], "msg": "a value over 10,000 characters", "type": "param_value"}
            for key, value in params.items()
            if len(value if isinstance(value, str) else json.dumps(value)) > 10_000
        ]
        if errors:
            detail = f"param {errors[0]['loc'][2]!r}: a value over 10,000 characters"
            return httpx.Response(422, json={"detail": detail, "code": "invalid", "errors": errors})
        self.param_posts.append(body)
        self.params.update(params)
        return httpx.Response(204)

    def _artifacts(self, request: httpx.Request, path: str) -> httpx.Response:
        """GET /runs/{id}/artifacts, and GET, PUT (attempt-checked), DELETE of /runs/{id}/artifacts/{path}."""
        self.check_token(request, worker=False)
        body = request.read()
        run_part, _, name = path.removeprefix("/runs/").partition("/artifacts")
        run_id, name = int(run_part), name.removeprefix("/")
        with self.lock:
            self.requests.append(f"{request.method} {path}")
            if request.method == "GET" and not name:
                items = [
                    {"path": p, "size": len(data), "modified": None, "kind": p.split("/")[0]}
                    for (rid, p), data in sorted(self.artifacts.items())
                    if rid == run_id
                ]
                return httpx.Response(
                    200,
                    json={
                        "run_id": run_id,
                        "items": items,
                        "count": len(items),
                        "total_size": sum(i["size"] for i in items),
                    },
                )
            if request.method == "GET":
                if (run_id, name) not in self.artifacts:
                    return _error(404, "not_found", f"no artifact {name}")
                return httpx.Response(200, content=self.artifacts[(run_id, name)])
            attempt = int(request.url.params["attempt"])
            if run_id != self.run["id"] or self.run["status"] != "running" or attempt != self.run["attempt"]:
                return _error(409, "conflict", "the attempt no longer owns the run")
            if request.method == "PUT":
                self.artifacts[(run_id, name)] = body
                return httpx.Response(
                    200, json={"path": name, "size": len(body), "modified": None, "kind": "output"}
                )
            if request.method == "DELETE" and self.artifacts.pop((run_id, name), None) is not None:
                return httpx.Response(204)
            return _error(404, "not_found", f"no artifact {name}")

    def _series(self, params: httpx.QueryParams) -> dict[str, Any]:
        """GET /runs/{id}/metrics as the API answers it: per key, buckets of equal step width."""
        keys = params["keys"].split(",") if params.get("keys") else sorted({k for k, _ in self.metrics})
        max_points = int(params.get("max_points", 1000))
        series: dict[str, Any] = {}
        for key in keys:
            points = sorted((step, v) for (k, step), v in self.metrics.items() if k == key)
            if not points:
                series[key] = {"total_points": 0, "step_min": None, "step_max": None, "buckets": []}
                continue
            smin, smax = points[0][0], points[-1][0]
            lo = max(smin, int(params["step_min"])) if params.get("step_min") else smin
            hi = min(smax, int(params["step_max"])) if params.get("step_max") else smax
            width = max(1, -(-(hi - lo + 1) // max_points))
            grouped: dict[int, list[tuple[int, float]]] = {}
            for step, value in points:
                if lo <= step <= hi:
                    grouped.setdefault((step - lo) // width, []).append((step, value))
            buckets = [
                {
                    "step_start": b[0][0],
                    "step_end": b[-1][0],
                    "min": min(v for _, v in b),
                    "max": max(v for _, v in b),
                    "last": b[-1][1],
                    "count": len(b),
                }
                for _, b in sorted(grouped.items())
            ]
            series[key] = {
                "total_points": len(points),
                "step_min": smin,
                "step_max": smax,
                "buckets": buckets,
            }
        return {"run_id": self.run["id"], "series": series}


def _error(status: int, code: str, detail: str) -> httpx.Response:
    return httpx.Response(status, json={"detail": detail, "code": code, "errors": []})
