"""Shared plumbing of the service benchmarks (metric_ingest, metric_query, submit_latency).

Each bench owns everything it starts: Postgres databases named ``rl_bench_<what>_<pid>`` (dropped with
FORCE at the end), server processes started in their own session (stopped by process-group id, SIGTERM
then SIGKILL), and a temporary folder. ``Resources`` is an ExitStack that runs all of that on normal
exit, on an exception, and on SIGINT/SIGTERM.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import platform
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
PG_HOST = os.environ.get("BENCH_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("BENCH_PG_PORT", "5432"))
PG_USER = os.environ.get("BENCH_PG_USER", "postgres")


def pg_url(db: str, driver: str = "postgresql+psycopg") -> str:
    return f"{driver}://{PG_USER}@{PG_HOST}:{PG_PORT}/{db}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _raise_interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


class Resources(contextlib.ExitStack):
    """Databases, processes and a temp dir, released in reverse order whatever happens."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.tmp = Path(tempfile.mkdtemp(prefix=f"rl_bench_{name}_"))
        self.logs = self.tmp / "logs"
        self.logs.mkdir()
        self.keep_logs = False

    def __enter__(self) -> Resources:
        super().__enter__()
        signal.signal(signal.SIGTERM, _raise_interrupt)
        self.callback(self._remove_tmp)
        return self

    def _remove_tmp(self) -> None:
        if self.keep_logs:
            print(f"(logs kept in {self.logs})", file=sys.stderr)
            return
        subprocess.run(["rm", "-rf", str(self.tmp)], check=False)

    # -- Postgres ------------------------------------------------------------------------------------
    def database(self, what: str) -> str:
        """A fresh database, dropped (WITH FORCE: open connections of our servers too) at the end."""
        name = f"rl_bench_{self.name}_{what}_{os.getpid()}"
        with psycopg.connect(pg_url("postgres", "postgresql"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        self.callback(drop_database, name)
        return name

    # -- processes -----------------------------------------------------------------------------------
    def process(self, label: str, argv: Sequence[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        log = open(self.logs / f"{label}.log", "wb")  # noqa: SIM115 - closed by the callback
        proc = subprocess.Popen(
            list(argv), env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.callback(log.close)
        self.callback(stop_process, proc)
        return proc

    def log_tail(self, label: str, n: int = 40) -> str:
        path = self.logs / f"{label}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:]) if path.is_file() else ""


def drop_database(name: str) -> None:
    try:
        with psycopg.connect(pg_url("postgres", "postgresql"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    except Exception as exc:  # pragma: no cover - report, do not mask the bench's own error
        print(f"warning: could not drop database {name}: {exc}", file=sys.stderr)


def stop_process(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM to the process group we created (the server and its own children), then SIGKILL."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


def wait_http(url: str, proc: subprocess.Popen[bytes], timeout: float = 90.0, what: str = "server") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before answering {url}")
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not answer {url} within {timeout:.0f} s")


# -- ReasonLab API ----------------------------------------------------------------------------------


@dataclass
class Api:
    url: str
    token: str  # the admin's API token
    worker_token: str
    env: dict[str, str]
    proc: subprocess.Popen[bytes]
    db_url: str

    def client(self, timeout: float = 300.0) -> httpx.Client:
        return httpx.Client(
            base_url=self.url + "/api/v1", headers={"Authorization": f"Bearer {self.token}"}, timeout=timeout
        )


_BOOTSTRAP = """
import json
from backend.bootstrap import ensure_admin, migrate
from backend.settings import Settings
s = Settings()
migrate(s)
c = ensure_admin(s)
print(json.dumps({"token": c.token}))
"""


def reasonlab_env(res: Resources, db: str, **extra: str) -> dict[str, str]:
    home = res.tmp / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REASONLAB_")}
    env.update(
        REASONLAB_DATABASE_URL=pg_url(db),
        REASONLAB_HOME=str(home),
        REASONLAB_WORKER_TOKEN=secrets.token_hex(16),  # 32 characters
        REASONLAB_RUN_BACKGROUND_LOOPS="false",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def start_api(res: Resources, env: dict[str, str], label: str = "api") -> Api:
    """Migrate the database, create the admin (once), start uvicorn on a free port."""
    out = subprocess.run([PYTHON, "-c", _BOOTSTRAP], env=env, cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"migrate/ensure_admin failed:\n{out.stderr[-3000:]}")
    token = json.loads(out.stdout.strip().splitlines()[-1])["token"]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**env, "REASONLAB_API_URL": url}
    proc = res.process(
        label,
        [
            PYTHON,
            "-m",
            "uvicorn",
            "backend.main:create_app",
            "--factory",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--no-access-log",
        ],
        env,
    )
    wait_http(f"{url}/api/v1/health", proc, what="ReasonLab API")
    return Api(url, token, env["REASONLAB_WORKER_TOKEN"], env, proc, env["REASONLAB_DATABASE_URL"])


def submit_diagnostic(
    client: httpx.Client, spec: dict[str, Any] | None = None, name: str = "bench"
) -> dict[str, Any]:
    r = client.post("/experiments", json={"name": name, "kind": "diagnostic", "spec": spec or {}})
    r.raise_for_status()
    run: dict[str, Any] = r.json()["runs"][0]
    return run


# -- MLflow server ----------------------------------------------------------------------------------


def start_mlflow(res: Resources, db: str, label: str = "mlflow") -> str:
    """``mlflow server`` on the same Postgres (driver: psycopg 3, via SQLAlchemy's postgresql+psycopg),
    one worker process (like our one uvicorn process; the clients here are sequential)."""
    port = free_port()
    art = res.tmp / "mlartifacts"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["PYTHONUNBUFFERED"] = "1"
    # MLflow 3 also starts a huey job runner (GenAI jobs, periodic tasks: several processes); metric
    # logging does not use it, and on a 2-core machine it would only steal CPU from the server measured.
    env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] = "false"
    proc = res.process(
        label,
        [
            str(Path(PYTHON).parent / "mlflow"),
            "server",
            "--backend-store-uri",
            pg_url(db),
            "--default-artifact-root",
            str(art),
            "--no-serve-artifacts",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        env,
    )
    url = f"http://127.0.0.1:{port}"
    wait_http(f"{url}/health", proc, timeout=180, what="MLflow server")
    return url


# -- reporting --------------------------------------------------------------------------------------


def machine() -> str:
    model = "?"
    with contextlib.suppress(Exception):
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    pg = "?"
    with contextlib.suppress(Exception), psycopg.connect(pg_url("postgres", "postgresql")) as conn:
        row = conn.execute("SHOW server_version").fetchone()
        pg = row[0] if row else "?"
    return (
        f"{model}, {os.cpu_count()} cores; Python {platform.python_version()}; PostgreSQL {pg}; "
        f"{dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}"
    )


def quantile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    if not s:
        return float("nan")
    pos = (len(s) - 1) * q
    lo, hi = int(pos), min(int(pos) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A markdown table (pastes into docs/benchmarks.md as is)."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    fmt = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join([fmt(cells[0]), "| " + " | ".join("-" * w for w in widths) + " |", *map(fmt, cells[1:])])
