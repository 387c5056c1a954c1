"""A real ReasonLab platform for end-to-end tests: the API under uvicorn and `reasonlab worker`
processes (a real Celery worker), on Postgres + Redis or embedded (SQLite + filesystem broker)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from backend.bootstrap import ensure_admin, migrate
from backend.settings import Settings
from common.runs import FINISHED_STATUSES as FINISHED
from reasonlab_sdk.client import ReasonLabClient

WORKER_TOKEN = "wk_integration_token_0123456789abcdef"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def up_env() -> dict[str, str]:
    """The environment of a test's own ``reasonlab up``: none of the machine's REASONLAB_ settings, a heartbeat
    every 0.5 s, and the API's MLflow mirror and the worker's preload off, as on ``Platform`` (they
    cost ~2.6 and ~4 CPU-s a platform; the tests that check either turn it on)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REASONLAB_")}
    env["REASONLAB_HEARTBEAT_INTERVAL"] = "0.5"
    env["REASONLAB_MLFLOW_MIRROR"] = "false"
    env["REASONLAB_WORKER_PRELOAD"] = "false"
    return env


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


class Platform:
    def __init__(
        self,
        home: Path,
        database_url: str,
        broker_url: str,
        *,
        mirror: bool = False,
        preload: bool = False,
        **settings: Any,
    ) -> None:
        """``mirror``: the API's MLflow mirror (backend/mirror/) runs. Off unless a test checks MLflow: it
        imports mlflow and migrates a new MLflow store, ~2.6 s of CPU per platform.
        ``preload``: the workers import every kind before forking job processes (the default of a real
        worker). Off here unless asked: a worker starts on 3 CPU-s instead of 7, and these tests' few runs
        each import their own kind; the module-scoped shared platform keeps it on."""
        self.home = home
        self.mirror = mirror
        self.port = free_port()
        self.api_url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "REASONLAB_HOME": str(home),
            "REASONLAB_DATABASE_URL": database_url,
            "REASONLAB_BROKER_URL": broker_url,
            "REASONLAB_API_URL": self.api_url,
            "REASONLAB_WORKER_TOKEN": WORKER_TOKEN,
            "REASONLAB_HEARTBEAT_INTERVAL": "0.5",
            "REASONLAB_HEARTBEAT_TIMEOUT": "4",
            "REASONLAB_REAPER_INTERVAL": "0.5",
            "REASONLAB_DISPATCH_INTERVAL": "0.2",
            "PYTHONUNBUFFERED": "1",
        }
        self.env["REASONLAB_MLFLOW_MIRROR"] = "true" if mirror else "false"
        self.env["REASONLAB_WORKER_PRELOAD"] = "true" if preload else "false"
        self.env.update({f"REASONLAB_{k.upper()}": str(v) for k, v in settings.items()})
        self.settings = Settings(
            home=home, database_url=database_url, broker_url=broker_url, worker_token=WORKER_TOKEN
        )
        self.api_proc: subprocess.Popen[bytes] | None = None
        self.workers: list[subprocess.Popen[bytes]] = []
        self.logs = home / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        migrate(self.settings)
        creds = ensure_admin(self.settings)
        assert creds is not None
        self.token = creds.token
        self.client = ReasonLabClient(self.api_url, self.token, timeout=30)

    def _spawn(
        self, args: list[str], log_name: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        log = open(self.logs / log_name, "ab")  # noqa: SIM115 - owned by the process
        return subprocess.Popen(
            [sys.executable, "-m", *args],
            env={**self.env, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def start_api(self) -> None:
        self.api_proc = self._spawn(
            [
                "uvicorn",
                "backend.main:create_app",
                "--factory",
                "--port",
                str(self.port),
                "--log-level",
                "warning",
            ],
            "api.log",
        )

        def healthy() -> bool:
            assert self.api_proc is not None
            if self.api_proc.poll() is not None:
                raise AssertionError(f"API exited: {(self.logs / 'api.log').read_text()[-3000:]}")
            try:
                return httpx.get(f"{self.api_url}/api/v1/health", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(healthy, 60, "the API to answer /health")

    def stop_api(self) -> None:
        if self.api_proc is not None and self.api_proc.poll() is None:
            self.api_proc.send_signal(signal.SIGTERM)
            self.api_proc.wait(20)
        self.api_proc = None

    def start_worker(self, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """A `reasonlab worker`; ``env`` overrides the platform's settings for it (another host's
        home and artifact root, ...)."""
        n = len(self.workers)
        proc = self._spawn(
            ["cli.main", "worker", "--hostname", f"w{n}@%h", "--loglevel", "INFO"], f"worker{n}.log", env
        )
        self.workers.append(proc)
        return proc

    def kill9_api(self) -> None:
        """kill -9 of the API (and its mirror thread): no shutdown, whatever it was doing."""
        assert self.api_proc is not None
        os.killpg(self.api_proc.pid, signal.SIGKILL)
        self.api_proc.wait(10)
        self.api_proc = None

    def kill9_worker(self, proc: subprocess.Popen[bytes]) -> None:
        """kill -9 of the worker: the Celery parent and its job process, no chance to clean up."""
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)

    def stop(self) -> None:
        """Stops the workers as ``reasonlab up`` does (cli/server.py): SIGTERM to each worker's own process, whose
        warm shutdown stops its pool and job processes, then SIGKILL to what is left of its process group.
        A SIGTERM to the whole group also reached the pool's process, and one that died of it while holding
        the pool's result-queue lock left the worker's warm shutdown waiting on that lock for good (its stack:
        billiard's task handler in ``outqueue.put``, every child gone): a 20-s stop, twice in a full run."""
        for proc in self.workers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.workers:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(20)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # a job process the warm shutdown did not end
            proc.wait(10)
        self.stop_api()
        self.client.close()

    # --- helpers over the API ---
    def submit(
        self, spec: dict[str, Any], sweep: dict[str, Any] | None = None, name: str = "e2e"
    ) -> dict[str, Any]:
        result: dict[str, Any] = self.client.create_experiment(name, "diagnostic", spec, sweep)
        return result

    def wait_finished(self, run_ids: list[int], timeout: float = 240) -> list[dict[str, Any]]:
        def done() -> list[dict[str, Any]] | None:
            runs = [self.client.get_run(r) for r in run_ids]
            return runs if all(r["status"] in FINISHED for r in runs) else None

        try:
            result: list[dict[str, Any]] = wait_for(done, timeout, f"runs {run_ids} to finish", interval=0.5)
        except AssertionError:
            raise AssertionError(self.diagnostics()) from None
        return result

    def wait_mirrored(self, run_ids: list[int], timeout: float = 120) -> None:
        """Until the API's MLflow mirror (backend/mirror/) has finished each of these finished runs: all
        of its points, results, artifacts and its status are in MLflow."""
        from sqlalchemy import select

        from backend.db import get_engine
        from backend.models import MirrorRun, Run

        assert self.mirror, (
            "wait_mirrored needs a platform made with mirror=True (@pytest.mark.mlflow_mirror)"
        )

        def done() -> bool:
            with get_engine(self.settings.database_url).connect() as conn:
                rows = conn.execute(
                    select(Run.attempt, Run.status, MirrorRun.pending, MirrorRun.done)
                    .join(MirrorRun, MirrorRun.run_id == Run.id)
                    .where(Run.id.in_(run_ids))
                ).all()
            return len(rows) == len(run_ids) and all(
                not pending and finished == f"{attempt}:{status}"
                for attempt, status, pending, finished in rows
            )

        try:
            wait_for(done, timeout, f"the MLflow mirror of runs {run_ids}", interval=0.3)
        except AssertionError:
            raise AssertionError(self.diagnostics()) from None

    def loss_steps(self, run_id: int) -> list[tuple[int, float | None]]:
        series = self.client.get_metrics(run_id, keys=["loss"], max_points=10_000)["series"]["loss"]
        return [(b["step_start"], b["last"]) for b in series["buckets"] if b["count"] == 1]

    def diagnostics(self) -> str:
        parts = []
        for f in sorted(self.logs.glob("*.log")):
            parts.append(f"--- {f.name}\n{f.read_text(errors='replace')[-4000:]}")
        return "\n".join(parts)
