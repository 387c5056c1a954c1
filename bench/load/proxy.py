"""``--nginx``: the compose deployment's reverse proxy in front of the API, on loopback.

The site configuration is docker/nginx/reasonlab.conf with only what ties it to compose replaced, as
tests/deploy/test_reverse_proxy.py does: it listens on 127.0.0.1:<a free port> instead of :8000, and
proxies to the API's loopback port instead of ``http://api:8000`` through Docker's DNS (and the runs' writes
to the ingest process's, ``--ingest``, instead of ``http://ingest:8000``). Every other
directive (timeouts, body limits per route, request buffering, per-address connection limits,
X-Forwarded-For) is the file's. The main nginx.conf around it (the image's part) sets the temp paths, its
error log at ``info`` (client timeouts and closed connections are info lines; the report counts them),
enough worker connections for the load's ~250 client connections and their upstream ones (nginx's default,
512, is about what the load holds at once), and an access log of each request's timing (``TIMING_LOG``):
the latency at the proxy, which leaves out the load generator's own delays (its one event loop runs every
simulated client on the same cores as the API)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

from bench._common import Resources, free_port

NGINX_CONF = Path(__file__).resolve().parents[2] / "docker" / "nginx" / "reasonlab.conf"


def nginx_binary() -> str:
    found = shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if Path(p).is_file()), None
    )
    if found is None:
        raise SystemExit("--nginx needs an nginx binary (`make nginx` installs Debian's nginx-light)")
    return found


def site_conf(listen_port: int, api_port: int, ingest_port: int | None = None) -> str:
    """docker/nginx/reasonlab.conf on loopback: its listen address and its upstreams, nothing else. The
    runs' writes go to ``ingest_port`` (compose's `ingest` service, ``--ingest``), else to the API too."""
    conf = NGINX_CONF.read_text()
    for old, new in (
        ("listen 8000;", f"listen 127.0.0.1:{listen_port};"),
        ("resolver 127.0.0.11 valid=10s ipv6=off;", ""),
        ("set $api http://api:8000;", f"set $api http://127.0.0.1:{api_port};"),
        ("set $ingest http://ingest:8000;", f"set $ingest http://127.0.0.1:{ingest_port or api_port};"),
    ):
        if conf.count(old) != 1:
            raise RuntimeError(f"{NGINX_CONF} no longer has exactly one {old!r}: update bench/load/proxy.py")
        conf = conf.replace(old, new)
    return conf


# the access log's fields: the client's address, the request, nginx's $request_time (from the request's
# first byte read to the answer's last byte sent, in seconds) and the wall-clock time it was logged
TIMING_LOG = "access.log"
TIMING_FORMAT = "$remote_addr $request_method $uri $status $request_time $msec"


def main_conf(prefix: Path) -> str:
    temp = "\n".join(
        f"    {kind}_temp_path {prefix / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    log = (
        f"    log_format timing '{TIMING_FORMAT}';\n"
        f"    access_log {prefix / TIMING_LOG} timing buffer=256k flush=2s;\n"
    )
    return (
        f"pid {prefix / 'nginx.pid'};\nerror_log stderr info;\nworker_rlimit_nofile 16384;\n"
        f"events {{\n    worker_connections 8192;\n}}\n"
        f"http {{\n{log}{temp}\n    include {prefix / 'site.conf'};\n}}\n"
    )


def start_nginx(res: Resources, api_port: int, ingest_port: int | None = None) -> tuple[str, Path]:
    """nginx in front of the API (and the ingest process) on 127.0.0.1 (one process, as this user); its
    URL and its timing log (``TIMING_LOG``)."""
    binary = nginx_binary()
    port = free_port()
    prefix = res.tmp / "nginx"
    prefix.mkdir()
    (prefix / "site.conf").write_text(site_conf(port, api_port, ingest_port))
    (prefix / "nginx.conf").write_text(main_conf(prefix))
    argv = [binary, "-e", "stderr", "-p", str(prefix), "-c", str(prefix / "nginx.conf")]
    check = subprocess.run([*argv, "-t", "-q"], capture_output=True, text=True, timeout=60)
    if check.returncode != 0:
        raise RuntimeError(f"nginx rejected the configuration:\n{check.stderr}")
    # master_process off: one process that never switches to another user (its temp paths are ours)
    proc = res.process("nginx", [*argv, "-g", "daemon off; master_process off;"], {})
    deadline = time.monotonic() + 20
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"nginx exited:\n{res.log_tail('nginx')}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError("nginx did not start listening within 20 s") from None
            time.sleep(0.05)
    return f"http://127.0.0.1:{port}", prefix / TIMING_LOG
