"""The compose deployment's reverse proxy: nginx is the only published door; it bounds
slow clients, buffers bodies, enforces the API's body limits route by route and sets X-Forwarded-For,
which the API believes from the proxy's fixed address only.

The compose model and docker/nginx/reasonlab.conf are checked as text everywhere; where an ``nginx``
binary is installed (Debian's nginx-light will do) the file is also checked by nginx itself and run
for real in front of the API on 127.0.0.1."""

from __future__ import annotations

import contextlib
import http.server
import ipaddress
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from backend.http import limits
from backend.settings import Settings
from tests.deploy.conftest import NGINX_CONF, SECRETS, run_compose, service_env

# -- nginx's configuration, read the way nginx reads it (enough of it for this file) --------------------


@dataclass
class Directive:
    name: str
    args: list[str]
    block: list[Directive] | None = None

    def all(self, name: str) -> list[Directive]:
        return [d for d in self.block or [] if d.name == name]

    def value(self, name: str) -> str | None:
        found = self.all(name)
        return found[-1].args[0] if found else None


def parse_nginx(text: str) -> list[Directive]:
    tokens = re.findall(r'"[^"]*"|[{};]|[^\s{};"]+', re.sub(r"#[^\n]*", "", text))
    pos = 0

    def block() -> list[Directive]:
        nonlocal pos
        out: list[Directive] = []
        words: list[str] = []
        while pos < len(tokens):
            token = tokens[pos]
            pos += 1
            if token == ";":
                out.append(Directive(words[0], [w.strip('"') for w in words[1:]]))
                words = []
            elif token == "{":
                out.append(Directive(words[0], [w.strip('"') for w in words[1:]], block()))
                words = []
            elif token == "}":
                assert not words, f"unterminated directive {words}"
                return out
            else:
                words.append(token)
        assert not words, f"unterminated directive {words}"
        return out

    return block()


@dataclass
class Server:
    directives: Directive
    locations: list[Directive] = field(default_factory=list)

    def location_for(self, uri: str) -> Directive | None:
        """nginx's choice: an exact match; else the longest prefix, unless (it is not ``^~`` and) a
        regular expression matches, the first in the file winning."""
        prefixes = []
        for loc in self.locations:
            modifier, pattern = (loc.args[0], loc.args[1]) if len(loc.args) == 2 else ("", loc.args[0])
            if modifier == "=" and uri == pattern:
                return loc
            if modifier in ("", "^~") and uri.startswith(pattern):
                prefixes.append((len(pattern), modifier, loc))
        longest = max(prefixes, key=lambda p: p[0]) if prefixes else None
        if longest is not None and longest[1] == "^~":
            return longest[2]
        for loc in self.locations:
            if loc.args[0] in ("~", "~*"):
                flags = re.I if loc.args[0] == "~*" else 0
                if re.search(loc.args[1], uri, flags):
                    return loc
        return longest[2] if longest is not None else None

    def setting(self, uri: str, name: str) -> str | None:
        loc = self.location_for(uri)
        own = loc.value(name) if loc is not None else None
        return own if own is not None else self.directives.value(name)


def _server() -> Server:
    top = parse_nginx(NGINX_CONF.read_text())
    servers = [d for d in top if d.name == "server"]
    assert len(servers) == 1
    return Server(servers[0], servers[0].all("location"))


def _size(text: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([kmg]?)", text.lower()).groups()  # type: ignore[union-attr]
    return int(number) * {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[unit]


def _seconds(text: str) -> float:
    number, unit = re.fullmatch(r"(\d+)(ms|s|m|h)?", text).groups()  # type: ignore[union-attr]
    return int(number) * {"ms": 0.001, "s": 1, None: 1, "m": 60, "h": 3600}[unit]


# one path or more of every route class of backend/http/limits.py, and of what is outside the API
SAMPLE_PATHS = [
    "/api/v1/runs/7/artifacts/checkpoints/step-1.pt",
    "/api/v1/runs/7/artifacts/model/weights/part-00001.safetensors",
    "/api/v1/projects/3/datasets/train.jsonl",
    "/api/v1/mlflow/default/api/2.0/mlflow-artifacts/artifacts/2/7/artifacts/plots/loss.png",
    "/api/v1/mlflow/default/api/2.0/mlflow/runs/log-batch",
    "/api/v1/runs/7/metrics",
    "/api/v1/runs/7/heartbeat",
    "/api/v1/runs/7/metrics/",
    "/api/v1/runs/7/logs",
    "/api/v1/runs/7/results",
    "/api/v1/runs/7/examples",
    "/api/v1/runs/7/finish",
    "/api/v1/exports/parquet",
    "/api/v1/auth/login",
    "/api/v1/auth/login/",
    "/api/v1/experiments",
    "/api/v1/runs/7/events",
    "/api/v1/runs/7/events/ticket",
    "/api/v1/runs/7/read-ticket",
    "/api/v1/runs/7/metrics/keys",
    "/api/v1",
    "/",
    "/runs/7",
    "/assets/index-0123abcd.js",
    "/api/v1x",
]


def test_the_samples_cover_every_route_class() -> None:
    classes = {limits.route_class(path).name for path in SAMPLE_PATHS}
    assert classes == {c.name for c in limits.LIMITS} | {limits.OUTSIDE_API.name}


def test_the_samples_cover_every_alternative_of_a_route_class() -> None:
    """Each name a route class's pattern lists (``logs|results|examples|finish``) has a sample: the proxy
    once sent per-example rows to its 4 MiB default while the API took 16 MiB."""
    for route in limits.LIMITS:
        for group in re.findall(r"\(\?:([A-Za-z|]+)\)", route.pattern.pattern):
            for name in group.split("|"):
                assert any(f"/{name}" in path for path in SAMPLE_PATHS), (route.name, name)


@pytest.mark.parametrize("path", SAMPLE_PATHS)
def test_the_proxys_body_limits_are_the_apis(path: str) -> None:
    limit = _server().setting(path, "client_max_body_size")
    assert limit is not None and _size(limit) == limits.body_limit(path), (path, limit)


def test_the_proxy_bounds_slow_clients_and_buffers_bodies() -> None:
    server = _server()
    d = server.directives
    for name in ("client_header_timeout", "client_body_timeout"):
        value = d.value(name)
        assert value is not None and 0 < _seconds(value) <= 10, name  # the API's own body deadline: 10 s
    assert d.value("proxy_request_buffering") == "on"
    assert d.all("limit_conn")
    # bodies reach the API whole, everywhere but the artifact upload (which the API streams on itself)
    for path in SAMPLE_PATHS:
        buffered = server.setting(path, "proxy_request_buffering") == "on"
        assert buffered is not limits.route_class(path).streamed, path
    # the streamed uploads pass through as they arrive (the API holds them to its minimum rate), and one
    # address sends a bounded number at once: never fewer than one credential's own share
    top = parse_nginx(NGINX_CONF.read_text())
    zones = {z.args[1].split("=", 1)[1].split(":")[0] for z in top if z.name == "limit_conn_zone"}
    share = Settings.model_fields["max_uploads_per_principal"].default
    for path in SAMPLE_PATHS:
        if limits.route_class(path).streamed:
            loc = server.location_for(path)
            assert loc is not None and loc.all("limit_conn"), path
            zone, count = loc.all("limit_conn")[0].args
            assert zone in zones and int(count) >= share, (path, zone, count)
    # X-Forwarded-For is the connection's address, never the client's own header (nor appended to it)
    forwarded = {h.args[0].lower(): h.args[1] for h in d.all("proxy_set_header")}
    assert forwarded["x-forwarded-for"] == "$remote_addr"
    assert all(not loc.all("proxy_set_header") for loc in server.locations)  # or they would drop these
    assert d.value("listen") == "8000"
    # the runs' writes to the ingest service (POST of metrics and heartbeats), all else to the API
    writes = re.compile(r"^/api/v1/runs/[^/]+/(?:metrics|heartbeat)/?$")
    for path in SAMPLE_PATHS:
        loc = server.location_for(path)
        assert loc is not None
        assert loc.value("proxy_pass") == ("$reasonlab_run_writes" if writes.match(path) else "$api"), path
    assert all(loc.value("proxy_pass") in {"$api", "$reasonlab_run_writes"} for loc in server.locations)
    assert [s.args for s in d.all("set")] == [["$api", "http://api:8000"], ["$ingest", "http://ingest:8000"]]
    (by_method,) = [
        m for m in top if m.name == "map" and m.args == ["$request_method", "$reasonlab_run_writes"]
    ]
    assert [(x.name, x.args) for x in by_method.block or []] == [("POST", ["$ingest"]), ("default", ["$api"])]
    # an event stream passes through as it comes
    assert server.setting("/api/v1/runs/7/events", "proxy_buffering") == "off"


# -- the compose model --------------------------------------------------------------------------------


def _published(service: dict[str, Any]) -> list[dict[str, Any]]:
    return list(service.get("ports") or [])


def test_the_proxy_is_the_only_door_to_the_api(config: dict[str, Any]) -> None:
    services = config["services"]
    assert services["proxy"]["image"].startswith("nginx:")
    mounts = {v["target"]: v for v in services["proxy"]["volumes"]}
    conf = mounts["/etc/nginx/conf.d/default.conf"]
    assert Path(conf["source"]) == NGINX_CONF and conf["read_only"]
    assert [(p["target"], p["published"]) for p in _published(services["proxy"])] == [(8000, "8000")]
    for name in ("api", "ingest"):
        assert not _published(services[name]), f"the {name} service is reached through the proxy only"
    for name in ("postgres", "redis"):
        assert not _published(services[name]), name
    # the proxy and the two API services share the edge network, no one else is on it
    on_edge = {name for name, s in services.items() if "edge" in (s.get("networks") or {})}
    assert on_edge == {"api", "ingest", "proxy"}
    assert set(services["proxy"]["networks"]) == {"edge"}


def test_the_ingest_service_is_the_api_without_its_background_loops(config: dict[str, Any]) -> None:
    """The runs' writes go to a second process of the same API (the proxy's map above): same image,
    command, settings and artifact store, but for the loops only one process may run; the project's own
    workers call it; the proxy waits for both."""
    services = config["services"]
    api, ingest = services["api"], services["ingest"]
    assert ingest["image"] == api["image"] and ingest["command"] == api["command"]
    assert service_env(config, "ingest") == {
        **service_env(config, "api"),
        "REASONLAB_RUN_BACKGROUND_LOOPS": "false",
        "REASONLAB_MIGRATE_ON_START": "0",  # the migrations run in `api` alone
    }
    assert "REASONLAB_RUN_BACKGROUND_LOOPS" not in service_env(config, "api")
    assert [v["target"] for v in ingest["volumes"]] == [v["target"] for v in api["volumes"]]
    assert set(services["proxy"]["depends_on"]) == {"api", "ingest"}
    for worker in ("worker", "worker-cpu"):
        assert service_env(config, worker)["REASONLAB_API_URL"] == "http://ingest:8000"


def _edge(config: dict[str, Any]) -> tuple[Any, Any, Any]:
    ipam = config["networks"]["edge"]["ipam"]["config"][0]
    address = ipaddress.ip_address(config["services"]["proxy"]["networks"]["edge"]["ipv4_address"])
    return ipaddress.ip_network(ipam["subnet"]), ipaddress.ip_network(ipam["ip_range"]), address


def test_the_api_believes_exactly_the_proxys_address(
    config: dict[str, Any], clean_env: pytest.MonkeyPatch
) -> None:
    from backend.settings import Settings

    subnet, dynamic, address = _edge(config)
    # fixed, inside the edge network, outside the range Docker hands out by itself
    assert address in subnet and address not in dynamic and dynamic.subnet_of(subnet)
    for key, value in service_env(config, "api").items():
        clean_env.setenv(key, value)
    assert Settings().trusted_proxies == [str(address)]


def test_moving_the_edge_network_moves_both_sides(compose: list[str], tmp_path: Path) -> None:
    env = {
        **SECRETS,
        "EDGE_SUBNET": "10.77.0.0/24",
        "EDGE_IP_RANGE": "10.77.0.128/25",
        "PROXY_ADDRESS": "10.77.0.9",
    }
    out = run_compose(compose, tmp_path, env, "config", "--format", "json")
    assert out.returncode == 0, out.stderr
    moved = json.loads(out.stdout)
    subnet, _, address = _edge(moved)
    assert str(subnet) == "10.77.0.0/24" and str(address) == "10.77.0.9"
    assert service_env(moved, "api")["REASONLAB_TRUSTED_PROXIES"] == "10.77.0.9"


# -- nginx itself, where installed ------------------------------------------------------------------

NGINX = shutil.which("nginx") or next(
    (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if Path(p).is_file()), None
)
# `make pytest` installs nginx-light; in CI (CI=true) a missing nginx fails these tests instead of skipping
needs_nginx = pytest.mark.skipif(
    NGINX is None and not os.environ.get("CI"), reason="no nginx binary here (make nginx)"
)


def _nginx_prefix(tmp_path: Path, conf: str) -> Path:
    """A prefix folder with a main nginx.conf that includes ``conf`` the way the image does (in http)."""
    prefix = tmp_path / "nginx"
    prefix.mkdir()
    (prefix / "site.conf").write_text(conf)
    temp = "\n".join(
        f"    {kind}_temp_path {prefix / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    (prefix / "nginx.conf").write_text(
        f"pid {prefix / 'nginx.pid'};\nerror_log stderr;\nevents {{}}\n"
        f"http {{\n    access_log off;\n{temp}\n    include {prefix / 'site.conf'};\n}}\n"
    )
    return prefix


@needs_nginx
def test_nginx_accepts_the_configuration(tmp_path: Path) -> None:
    assert NGINX is not None
    prefix = _nginx_prefix(tmp_path, NGINX_CONF.read_text())
    out = subprocess.run(
        [NGINX, "-t", "-q", "-e", "stderr", "-p", str(prefix), "-c", str(prefix / "nginx.conf")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


PROXY_TIMEOUT = 2  # the test's client_header_timeout and client_body_timeout (the file's: 10 s)


class _IngestRecorder(http.server.BaseHTTPRequestHandler):
    """Stands in for the ingest service: notes each request it gets and answers 202."""

    seen: list[tuple[str, str]]

    def _answer(self) -> None:
        self.seen.append((self.command, self.path))
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def _stopped(server: http.server.ThreadingHTTPServer) -> Iterator[None]:
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def proxied(tmp_path: Path, home: Path) -> Iterator[tuple[int, Any, list[tuple[str, str]]]]:
    """The API on a real uvicorn server started as ``reasonlab api`` starts it, trusting 127.0.0.1 (where
    nginx connects from), and nginx with docker/nginx/reasonlab.conf in front of it, both on loopback; the
    ingest service is a recorder noting what reaches it (the third item)."""
    from cli.server import uvicorn_options
    from tests.backend.conftest import make_settings
    from tests.backend.test_edge_slow_clients import serve

    assert NGINX is not None
    settings = make_settings(f"sqlite:///{tmp_path / 'edge.db'}", home, trusted_proxies=["127.0.0.1"])
    seen: list[tuple[str, str]] = []
    recorder = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), type("Recorder", (_IngestRecorder,), {"seen": seen})
    )
    threading.Thread(target=recorder.serve_forever, daemon=True).start()
    with serve(settings, **uvicorn_options(settings)) as live, _stopped(recorder):
        port = _free_port()
        conf = NGINX_CONF.read_text()
        for old, new in (
            ("listen 8000;", f"listen 127.0.0.1:{port};"),
            ("resolver 127.0.0.11 valid=10s ipv6=off;", ""),
            ("set $api http://api:8000;", f"set $api http://127.0.0.1:{live.port};"),
            (
                "set $ingest http://ingest:8000;",
                f"set $ingest http://127.0.0.1:{recorder.server_address[1]};",
            ),
            ("client_header_timeout 10s;", f"client_header_timeout {PROXY_TIMEOUT}s;"),
            ("client_body_timeout 10s;", f"client_body_timeout {PROXY_TIMEOUT}s;"),
        ):
            assert conf.count(old) == 1, old
            conf = conf.replace(old, new)
        prefix = _nginx_prefix(tmp_path, conf)
        argv = [NGINX, "-e", "stderr", "-p", str(prefix), "-c", str(prefix / "nginx.conf")]
        # one process, as this user (no master switching its workers to another user)
        proc = subprocess.Popen([*argv, "-g", "daemon off; master_process off;"], stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 20
            while True:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "nginx did not start"
                    time.sleep(0.05)
            yield port, live, seen
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def _send(port: int, data: bytes, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30, source_address=(source, 0))
    sock.sendall(data)
    return sock


def _status(sock: socket.socket) -> int | None:
    """The answer's status, or None if the proxy closed the connection without one."""
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            return None
        data += chunk
    return int(data.split(b" ", 2)[1])


def _login(username: str, password: str, headers: str = "") -> bytes:
    body = json.dumps({"username": username, "password": password}).encode()
    return (
        f"POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


@needs_nginx
def test_nginx_in_front_of_the_api(proxied: tuple[int, Any, list[tuple[str, str]]]) -> None:
    port, live, _ = proxied
    # through the proxy, the API sees the client's address (127.0.0.2 here), never a spoofed one
    with _send(
        port, _login("nobody", "not-the-password", "X-Forwarded-For: 198.51.100.9\r\n"), "127.0.0.2"
    ) as s:
        assert _status(s) == 401
    throttle = live.app.state.login_throttle
    assert throttle.failures("nobody", "127.0.0.2") == 1
    assert throttle.failures("nobody", "198.51.100.9") == throttle.failures("nobody", "127.0.0.1") == 0
    with _send(port, _login("admin", live.admin_password)) as s:
        assert _status(s) == 200
    # a login body over the API's limit stops at the proxy
    big = b"POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 70000\r\n\r\n"
    with _send(port, big) as s:
        assert _status(s) == 413
    # slow clients: headers that never end, a body that never ends
    slow_head = _send(port, b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n")
    slow_body = _send(port, b"POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
    started = time.monotonic()
    try:
        with _send(port, b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") as s:
            assert _status(s) == 200  # answered meanwhile
        assert _status(slow_body) in (408, None)  # nginx drops it (the API is asked only with a whole body)
        assert _status(slow_head) in (408, None)
        assert time.monotonic() - started >= PROXY_TIMEOUT - 0.5
    finally:
        slow_head.close()
        slow_body.close()


@needs_nginx
def test_the_runs_writes_go_to_the_ingest_service(proxied: tuple[int, Any, list[tuple[str, str]]]) -> None:
    """POSTs of metric batches and heartbeats reach the ingest service; a chart's GET of the same route,
    and every other request, the API (which refuses them here: no credential)."""
    port, _, seen = proxied

    def send(method: str, path: str, body: bytes = b"") -> int | None:
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        with _send(port, head.encode() + body) as s:
            return _status(s)

    assert send("POST", "/api/v1/runs/7/metrics", b'{"points": []}') == 202
    assert send("POST", "/api/v1/runs/7/heartbeat/", b"{}") == 202
    assert send("GET", "/api/v1/runs/7/metrics?keys=loss") == 401  # the API's answer
    assert send("POST", "/api/v1/runs/7/results", b"{}") == 401
    assert send("POST", "/api/v1/runs/7/claim", b"{}") == 401
    assert seen == [("POST", "/api/v1/runs/7/metrics"), ("POST", "/api/v1/runs/7/heartbeat/")]
