"""The load test's parts that decide its verdict (bench/load/): the proxy's configuration is compose's on
loopback, the costly query sits exactly at the query language's cost bound (and one lookup past it), the
misbehavers' answers are told apart (the API's from nginx's), and the lost-point count finds a missing
acknowledged point."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

import psycopg
import pytest

from backend.query import RUNS, QueryError, where
from backend.query.cost import MAX_LOOKUPS, MAX_TESTS
from bench.load.driver import count_points
from bench.load.misbehave import _status_line, costly_query
from bench.load.proxy import NGINX_CONF, main_conf, site_conf
from tests.conftest import PG_ADMIN_URL
from tests.deploy.test_reverse_proxy import parse_nginx


def test_the_proxy_is_composes_configuration_on_loopback() -> None:
    original = NGINX_CONF.read_text().splitlines()
    generated = site_conf(18080, 18081).splitlines()
    changed = [(a.strip(), b.strip()) for a, b in zip(original, generated, strict=True) if a != b]
    assert changed == [
        ("listen 8000;", "listen 127.0.0.1:18080;"),
        ("resolver 127.0.0.11 valid=10s ipv6=off;", ""),
        ("set $api http://api:8000;", "set $api http://127.0.0.1:18081;"),
        ("set $ingest http://ingest:8000;", "set $ingest http://127.0.0.1:18081;"),  # no ingest: the API
    ]
    generated = site_conf(18080, 18081, 18082).splitlines()
    assert "set $ingest http://127.0.0.1:18082;" in [line.strip() for line in generated]
    [server] = [d for d in parse_nginx("\n".join(generated)) if d.name == "server"]
    assert server.value("client_body_timeout") == "10s"  # the file's limits, untouched


def test_nginx_accepts_the_generated_configuration(tmp_path: Path) -> None:
    # make test installs nginx (`make nginx`): a missing one is a failure here, never a skip
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    assert Path(nginx).is_file(), "no nginx: run `make nginx`"
    (tmp_path / "site.conf").write_text(site_conf(18080, 18081))
    (tmp_path / "nginx.conf").write_text(main_conf(tmp_path))
    argv = [nginx, "-t", "-q", "-e", "stderr", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_the_proxys_timing_log_names_each_clients_requests(tmp_path: Path) -> None:
    """nginx as the load test runs it logs each request's $request_time; the report reads the well-behaved
    writers' run writes (127.0.1.x) and the browsers' reads (127.0.2.x) from it, nothing else."""
    import http.client
    import http.server
    import signal
    import threading
    import time

    from bench._common import free_port
    from bench.load.proxy import TIMING_LOG
    from bench.load.report import proxy_latencies

    class Upstream(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status = 503 if self.path.endswith("/results") else 200
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        do_GET = do_POST = _answer

        def log_message(self, *_: object) -> None:
            pass

    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    port = free_port()
    (tmp_path / "site.conf").write_text(site_conf(port, upstream.server_address[1]))
    (tmp_path / "nginx.conf").write_text(main_conf(tmp_path))
    argv = [nginx, "-e", "stderr", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")]
    proc = subprocess.Popen([*argv, "-g", "daemon off; master_process off;"], stderr=subprocess.DEVNULL)
    since = time.monotonic()
    try:
        requests = [
            ("127.0.1.3", "POST", "/api/v1/runs/7/metrics"),
            ("127.0.1.3", "POST", "/api/v1/runs/7/heartbeat"),
            ("127.0.1.4", "POST", "/api/v1/runs/7/claim"),  # not a run write
            ("127.0.2.4", "GET", "/api/v1/experiments/1"),
            ("127.0.2.4", "GET", "/api/v1/runs/7/results"),  # a 5xx, counted apart
            ("127.0.2.4", "GET", "/api/v1/runs/7/events"),  # a stream, left out
            ("127.0.3.9", "GET", "/api/v1/experiments/1"),  # a misbehaver, left out
        ]
        for source, method, path in requests:
            for _ in range(100):  # nginx may not listen yet
                try:
                    conn = http.client.HTTPConnection(
                        "127.0.0.1", port, timeout=10, source_address=(source, 0)
                    )
                    conn.request(method, path, body=b"{}" if method == "POST" else None)
                    conn.getresponse().read()
                    conn.close()
                    break
                except ConnectionRefusedError:
                    time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGQUIT)  # a graceful stop writes the buffered log
        proc.wait(timeout=30)
        upstream.shutdown()
    groups = proxy_latencies(tmp_path / TIMING_LOG, since, time.monotonic())
    assert {k: (len(xs), n5) for k, (xs, n5) in groups.items()} == {
        "writers: POST metrics": (1, 0),
        "writers: POST heartbeat": (1, 0),
        "readers: all reads (event streams aside)": (1, 1),
    }
    assert all(0 <= x < 10 for xs, _ in groups.values() for x in xs)
    assert proxy_latencies(tmp_path / TIMING_LOG, since - 100, since - 50) == {}  # outside the window


def test_the_costly_query_is_at_the_bound_and_the_other_one_past_it() -> None:
    at = costly_query(over=False)
    where(RUNS, at, "postgresql")  # runs: accepted
    assert at.count("metrics.") + at.count("results.") + at.count("tags ") == MAX_LOOKUPS
    tests = MAX_LOOKUPS + sum(len(part.split(",")) for part in at.split(" in (")[1:])
    assert tests == MAX_TESTS
    with pytest.raises(QueryError) as caught:
        where(RUNS, costly_query(over=True), "postgresql")
    assert "too costly" in caught.value.message


def _answer(data: bytes) -> str:
    async def read() -> str:
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        return await _status_line(reader)

    return asyncio.run(read())


def test_the_apis_answers_are_told_from_the_proxys() -> None:
    api = b'HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n\r\n{"code": "x"}'
    assert _answer(api) == "HTTP 429"
    proxy = b"HTTP/1.1 429 Too Many Requests\r\nServer: nginx\r\nContent-Type: text/html\r\n\r\n<html>"
    assert _answer(proxy) == "HTTP 429 from nginx"
    assert _answer(b"") == "closed without an answer"


@pytest.mark.postgres
def test_a_missing_acknowledged_point_is_counted_lost() -> None:
    """Two runs, 3 and 2 steps acknowledged of 2 keys: one acknowledged point deleted, and a point past
    the acknowledged steps (a timed-out batch stored anyway) that must not hide it."""
    name = f"rl_test_loadcount_{os.getpid()}"
    admin = PG_ADMIN_URL.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        with psycopg.connect(admin.rsplit("/", 1)[0] + f"/{name}", autocommit=True) as conn:
            conn.execute(
                "CREATE TABLE metric (run_id int, key text, step bigint, PRIMARY KEY (run_id, key, step))"
            )
            rows = [(r, k, s) for r, steps in ((1, 3), (2, 2)) for k in ("a", "b") for s in range(steps)]
            rows.append((2, "a", 2))  # stored, never acknowledged
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO metric VALUES (%s, %s, %s)", rows)
            whole = count_points(name, [1, 2], [[3], [2]], 2)
            assert whole == {"acknowledged": 10, "found": 10, "lost": 0, "runs_short": 0, "stored_all": 11}
            conn.execute("DELETE FROM metric WHERE run_id = 2 AND key = 'b' AND step = 1")
            short = count_points(name, [1, 2], [[3], [2]], 2)
            assert short == {"acknowledged": 10, "found": 9, "lost": 1, "runs_short": 1, "stored_all": 10}
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_the_verdict_counts_a_well_behaved_5xx_and_a_slow_write(capsys: pytest.CaptureFixture[str]) -> None:
    """The report's verdict: a 503 to a well-behaved writer (even in the warm-up) and a write p99 over 1 s
    are both a NO; lost points only when the database is short."""
    import argparse
    import time

    from bench.load.driver import Setup
    from bench.load.recorder import Recorder
    from bench.load.report import budget_report
    from bench.load.sampling import Sampler

    rec = Recorder()
    rec.measure_from = time.monotonic() - 10
    metrics, reads = "POST /runs/{id}/metrics", "GET /experiments/{id}"
    for i in range(99):
        rec.routes[metrics].samples.append((rec.measure_from + 1, 0.1 + i / 1000))
        rec.routes[reads].samples.append((rec.measure_from + 1, 0.05))
    rec.routes[metrics].samples += [(rec.measure_from + 2, 1.2)] * 5  # 5 of 104 writes: p99 over 1 s
    rec.routes[metrics].errors["(warm-up) HTTP 503"] += 1
    rec.points = 400
    setup = Setup("http://x", "t", "w", "u", "p", None, "db", None)  # type: ignore[arg-type]
    args = argparse.Namespace(duration=60.0)
    points = {"acknowledged": 400, "found": 400, "lost": 0, "runs_short": 0, "stored_all": 400}
    budget_report(args, rec, Sampler(0, "db"), setup, points)
    verdict = capsys.readouterr().out.splitlines()[-1]
    assert verdict == (
        "verdict: write p99 < 1 s (POST metrics): NO; 0 5xx for the well-behaved: NO; 0 lost points: yes"
    )
    del rec.routes[metrics].samples[-5:]
    del rec.routes[metrics].errors["(warm-up) HTTP 503"]
    budget_report(args, rec, Sampler(0, "db"), setup, {**points, "found": 399, "lost": 1, "runs_short": 1})
    verdict = capsys.readouterr().out.splitlines()[-1]
    assert verdict == (
        "verdict: write p99 < 1 s (POST metrics): yes; 0 5xx for the well-behaved: yes; 0 lost points: NO"
    )


def test_a_slow_request_records_the_answer_or_the_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    """A slow body against a server that answers 408 after a few pieces, and one that resets the
    connection: each is one outcome, and neither ends the misbehaver's loop with an exception."""
    import socket
    import struct
    import time

    from bench.load import misbehave

    monkeypatch.setattr(misbehave, "TRICKLE", 0.02)

    async def main() -> dict[str, int]:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            await reader.readexactly(3 * misbehave.PIECE)  # three pieces, then the budget's answer
            writer.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n\r\n{}")
            await writer.drain()
            writer.close()

        async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()

        m = misbehave.Misbehaver("slow-bodies", "u", "t", "127.0.0.1")
        for handler in (answer, reset):
            server = await asyncio.start_server(handler, "127.0.0.1", 0)
            port = server.sockets[0].getsockname()[1]
            head = misbehave._head("POST", "/api/v1/runs/1/metrics", "t", "application/json")
            end = time.monotonic() + 30
            await misbehave.slow_request(m, "127.0.0.1", port, head, 10**6, end, "127.0.0.1")
            server.close()
            await server.wait_closed()
        return dict(m.outcomes)

    outcomes = asyncio.run(main())
    assert outcomes.pop("HTTP 408") == 1
    [(what, n)] = outcomes.items()
    assert n == 1 and what in (
        "closed without an answer",
        "reset: ConnectionResetError",
        "reset while sending",
    )
