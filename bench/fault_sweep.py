"""Fault injection during a running sweep on Postgres + Redis (not a test: a script that reports).

    .venv/bin/python bench/fault_sweep.py                          # every fault, once (about 5 minutes)
    .venv/bin/python bench/fault_sweep.py --no-service-restarts    # API and worker faults only

Setup (started and removed by this script, like the other service benchmarks): our API (uvicorn, dispatcher
and reaper on) on a fresh Postgres database, broker redis://127.0.0.1:6379/<db> (the first empty db from
--redis-db up; FLUSHDB at the end), two ``reasonlab worker`` processes (queue cpu), the MLflow mirror in
SQLite under the temporary home. A sweep of diagnostic runs (``--runs`` seeds, ``--steps`` steps each,
a checkpoint every ``--checkpoint-every`` steps, ``--step-delay`` s a step) is submitted, and while it runs:

  1. api-kill       kill -9 of the API (its process group), restarted on the same port 3 s later
  2. worker-kill    kill -9 of a worker with a run in progress (parent and job), another one started
  3. postgres       the machine's Postgres restarted (``pg_ctlcluster --skip-systemctl-redirect <v> main
                    restart``, as docs/operations.md says for a host without systemd)
  4. redis          the machine's Redis restarted without saving (``redis-cli shutdown nosave``, then
                    ``redis-server --daemonize yes ...``): every message in flight is lost

Steps 3 and 4 restart services other processes on this machine use (tests, other benchmarks): run this
script sparingly, and never from pytest; ``--no-service-restarts`` leaves them out.

Then it waits for every run to finish and checks: every run succeeded; in the platform, each run's
``loss`` has exactly the steps 1..N once and ``final_loss`` one point; in the MLflow mirror, each run is
FINISHED, ``loss`` has one entry per step 1..N with the platform's values and ``final_loss`` one entry;
no unacknowledged message is left in Redis. Prints the timeline, a table per run and PASS/FAIL per check;
exit status 1 when a check failed. The API's settings: heartbeat timeout 30 s (the reaper requeues a
killed worker's run after that), REDISPATCH_AFTER 20 s (a run whose message Redis lost is sent again).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
import redis

from bench._common import (
    PYTHON,
    Api,
    Resources,
    machine,
    reasonlab_env,
    start_api,
    table,
    wait_http,
)
from common.runs import FINISHED_STATUSES as FINISHED

REDIS_START = [
    "redis-server",
    "--daemonize",
    "yes",
    "--bind",
    "127.0.0.1",
    "-::1",
    "--port",
    "6379",
    "--save",
    "",
    "--appendonly",
    "no",
    "--dir",
    "/var/lib/redis",
    "--logfile",
    "/var/log/redis/ci.log",
]


def pick_redis_db(first: int) -> int:
    for db in range(first, 16):
        if redis.Redis(host="127.0.0.1", port=6379, db=db).dbsize() == 0:
            return db
    raise RuntimeError(f"no empty redis db in {first}..15")


def flush_redis(db: int) -> None:
    try:
        redis.Redis(host="127.0.0.1", port=6379, db=db).flushdb()
    except redis.RedisError as exc:  # pragma: no cover - report, do not mask the script's own error
        print(f"warning: could not flush redis db {db}: {exc}", file=sys.stderr)


def wait_until(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except (httpx.HTTPError, redis.RedisError, KeyError, ValueError):
            value = None
        if value:
            return value
        time.sleep(interval)
    raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")


class FaultSweep:
    def __init__(self, res: Resources, args: argparse.Namespace, api: Api, broker_db: int) -> None:
        self.res, self.args, self.api, self.broker_db = res, args, api, broker_db
        self.port = int(api.url.rsplit(":", 1)[1])
        self.client = api.client(timeout=30)
        self.workers: list[subprocess.Popen[bytes]] = []
        self.api_starts = 1
        self.t0 = time.monotonic()
        self.timeline: list[tuple[float, str, str]] = []
        self.run_ids: list[int] = []
        self.killed_run: int | None = None

    # -- services ------------------------------------------------------------------------------------
    def note(self, event: str, detail: str = "") -> None:
        t = time.monotonic() - self.t0
        self.timeline.append((t, event, detail))
        print(f"[{t:6.1f} s] {event} {detail}", flush=True)

    def start_worker(self) -> subprocess.Popen[bytes]:
        n = len(self.workers)
        argv = [PYTHON, "-m", "cli.main", "worker", "--hostname", f"fault{n}@%h", "--queue", "cpu"]
        proc = self.res.process(f"worker{n}", argv, self.api.env)
        self.workers.append(proc)
        return proc

    def restart_api(self) -> None:
        label = f"api{self.api_starts}"
        self.api_starts += 1
        argv = [PYTHON, "-m", "uvicorn", "backend.main:create_app", "--factory", "--host", "127.0.0.1"]
        argv += ["--port", str(self.port), "--log-level", "warning", "--no-access-log"]
        self.api.proc = self.res.process(label, argv, self.api.env)
        wait_http(f"{self.api.url}/api/v1/health", self.api.proc, what="ReasonLab API")

    def api_healthy(self) -> bool:
        try:
            return httpx.get(f"{self.api.url}/api/v1/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    # -- the sweep -----------------------------------------------------------------------------------
    def submit(self) -> None:
        spec = {
            "train": {
                "steps": self.args.steps,
                "checkpoint_every": self.args.checkpoint_every,
                "step_delay": self.args.step_delay,
            }
        }
        sweep = {"grid": {"seed": list(range(1, self.args.runs + 1))}}
        body = {"name": "fault-sweep", "kind": "diagnostic", "spec": spec, "sweep": sweep}
        r = self.client.post("/experiments", json=body)
        r.raise_for_status()
        self.run_ids = [run["id"] for run in r.json()["runs"]]
        self.note("submitted", f"{len(self.run_ids)} runs: {self.run_ids}")

    def runs(self) -> list[dict[str, Any]]:
        out = []
        for rid in self.run_ids:
            r = self.client.get(f"/runs/{rid}")
            r.raise_for_status()
            out.append(r.json())
        return out

    def running(self, min_done: int = 0) -> list[dict[str, Any]]:
        return [
            r
            for r in self.runs()
            if r["status"] == "running" and ((r.get("progress") or {}).get("done") or 0) >= min_done
        ]

    def status_line(self) -> str:
        counts: dict[str, int] = {}
        for r in self.runs():
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))

    # -- faults --------------------------------------------------------------------------------------
    def kill_api(self) -> None:
        wait_until(lambda: self.running(min_done=10), 300, "a run past step 10")
        before = self.status_line()
        os.killpg(self.api.proc.pid, signal.SIGKILL)
        self.api.proc.wait(10)
        self.note("api-kill", f"kill -9 of the API (pid {self.api.proc.pid}); runs before: {before}")
        time.sleep(3)
        self.restart_api()
        self.note("api-restarted", f"same port {self.port}")

    def kill_worker(self) -> None:
        run = wait_until(
            lambda: self.running(min_done=self.args.checkpoint_every + 5), 300, "a run past a checkpoint"
        )[0]
        job_pid = int(str(run["worker"]).rsplit(":", 1)[1])
        parent = int(Path(f"/proc/{job_pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        victim = next(p for p in self.workers if p.pid == parent and p.poll() is None)
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait(10)
        done = (run.get("progress") or {}).get("done")
        self.note(
            "worker-kill",
            f"kill -9 of worker pid {victim.pid} (job {job_pid}, run {run['id']} at step {done})",
        )
        self.killed_run = int(run["id"])
        self.start_worker()
        self.note("worker-started", f"worker{len(self.workers) - 1}")

    def restart_postgres(self) -> None:
        wait_until(lambda: self.running(min_done=5), 300, "a run in progress")
        version = sorted(os.listdir("/etc/postgresql"))[-1]
        t = time.monotonic()
        out = subprocess.run(
            ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"],
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            raise RuntimeError(f"pg_ctlcluster restart failed: {out.stderr}")
        self.note("postgres-restart", f"pg_ctlcluster {version} main restart: {time.monotonic() - t:.1f} s")
        wait_until(self.api_healthy, 120, "the API's health (SELECT 1) after the Postgres restart")
        self.note("postgres-back", "the API answers /health")

    def restart_redis(self) -> None:
        wait_until(lambda: self.running(min_done=5), 300, "a run in progress")
        t = time.monotonic()
        subprocess.run(["redis-cli", "shutdown", "nosave"], capture_output=True, text=True)
        wait_until(
            lambda: subprocess.run(["redis-cli", "ping"], capture_output=True).returncode != 0,
            30,
            "Redis to stop",
        )
        out = subprocess.run(REDIS_START, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"redis-server failed to start: {out.stderr}")
        wait_until(lambda: redis.Redis(host="127.0.0.1", port=6379).ping(), 30, "Redis to answer")
        self.note(
            "redis-restart",
            f"shutdown nosave + redis-server: {time.monotonic() - t:.1f} s (messages in flight lost)",
        )

    # -- checks --------------------------------------------------------------------------------------
    def platform_series(self, rid: int, key: str, n: int) -> list[tuple[int, float | None, int]]:
        r = self.client.get(f"/runs/{rid}/metrics", params={"keys": key, "max_points": max(n, 1)})
        r.raise_for_status()
        series = r.json()["series"][key]
        return [(b["step_start"], b["last"], b["count"]) for b in series["buckets"]]

    def wait_mirrored(self, timeout: float) -> None:
        """The API mirrors finished runs to MLflow from its database a moment later (backend/mirror/):
        wait for every run's MLflow status (the mirror's last step), or give up and let check() say."""
        from mlflow import MlflowClient

        mirror = MlflowClient(tracking_uri=self.api.env["REASONLAB_MLFLOW_TRACKING_URI"])

        def mirrored() -> bool:
            runs = self.runs()
            return all(
                r.get("mlflow_run_id") and mirror.get_run(r["mlflow_run_id"]).info.status != "RUNNING"
                for r in runs
            )

        try:
            wait_until(mirrored, timeout, "the MLflow mirror", interval=1)
        except RuntimeError as exc:
            self.note("mirror", str(exc))

    def check(self) -> tuple[list[tuple[str, bool, str]], list[list[Any]]]:
        from mlflow import MlflowClient

        n = self.args.steps
        mirror = MlflowClient(tracking_uri=self.api.env["REASONLAB_MLFLOW_TRACKING_URI"])
        runs = self.runs()
        checks: list[tuple[str, bool, str]] = []
        rows: list[list[Any]] = []
        bad_status = [r["id"] for r in runs if r["status"] != "succeeded"]
        checks.append(
            (
                "every run succeeded",
                not bad_status,
                f"not succeeded: {bad_status}" if bad_status else f"{len(runs)} runs",
            )
        )
        platform_bad, mirror_bad = [], []
        for r in runs:
            rid = r["id"]
            loss = self.platform_series(rid, "loss", n)
            final = self.platform_series(rid, "final_loss", n)
            p_ok = [s for s, _, _ in loss] == list(range(1, n + 1)) and all(c == 1 for _, _, c in loss)
            p_ok = p_ok and [(s, c) for s, _, c in final] == [(n, 1)]
            if not p_ok:
                platform_bad.append(rid)
            m_loss: list[Any] = []
            m_final: list[Any] = []
            m_status = "-"
            if r.get("mlflow_run_id"):
                m_status = mirror.get_run(r["mlflow_run_id"]).info.status
                m_loss = mirror.get_metric_history(r["mlflow_run_id"], "loss")
                m_final = mirror.get_metric_history(r["mlflow_run_id"], "final_loss")
            m_steps = sorted(m.step for m in m_loss)
            values_match = {m.step: m.value for m in m_loss} == {s: v for s, v, _ in loss}
            m_ok = m_status == "FINISHED" and m_steps == list(range(1, n + 1)) and values_match
            m_ok = m_ok and len(m_final) == 1
            if not m_ok:
                mirror_bad.append(rid)
            resumed = self.resumed_from(rid)
            rows.append(
                [
                    rid,
                    r["status"],
                    f"{r['attempt']}/{r['max_attempts']}",
                    resumed,
                    len(loss),
                    len(final),
                    m_status,
                    len(m_loss),
                    len(set(m_steps)),
                    len(m_final),
                    "yes" if values_match else "NO",
                ]
            )
        checks.append(
            (
                f"platform: loss steps 1..{n} once, final_loss once",
                not platform_bad,
                f"bad runs: {platform_bad}" if platform_bad else "every run",
            )
        )
        checks.append(
            (
                f"MLflow: FINISHED, loss one entry per step 1..{n} = platform values, final_loss once",
                not mirror_bad,
                f"bad runs: {mirror_bad}" if mirror_bad else "every run",
            )
        )
        broker = redis.Redis(host="127.0.0.1", port=6379, db=self.broker_db)
        unacked = [json.loads(raw)[0]["headers"]["id"] for raw in broker.hvals("unacked")]
        checks.append(
            ("Redis: no unacknowledged message left", not unacked, f"left: {unacked}" if unacked else "none")
        )
        return checks, rows

    def resumed_from(self, rid: int) -> Any:
        r = self.client.get(f"/runs/{rid}/results", params={"kind": "diagnostic"})
        if r.status_code != 200 or not r.json():
            return "-"
        value = r.json()[-1]["payload"].get("resumed_from_step")
        return "-" if value is None else value


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=6, help="runs in the sweep (a grid over seeds)")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--checkpoint-every", type=int, default=25)
    ap.add_argument("--step-delay", type=float, default=0.1)
    ap.add_argument("--redis-db", type=int, default=10, help="first redis db to try (must be empty)")
    ap.add_argument("--no-service-restarts", action="store_true", help="leave Postgres and Redis alone")
    ap.add_argument("--timeout", type=float, default=1200, help="seconds to wait for the sweep to finish")
    args = ap.parse_args()

    rdb = pick_redis_db(args.redis_db)
    print(f"# fault sweep: {machine()}", flush=True)
    with Resources("fault") as res:
        res.callback(flush_redis, rdb)
        db = res.database("db")
        home = res.tmp / "home"
        env = reasonlab_env(
            res,
            db,
            REASONLAB_BROKER_URL=f"redis://127.0.0.1:6379/{rdb}",
            REASONLAB_RUN_BACKGROUND_LOOPS="true",
            REASONLAB_HEARTBEAT_INTERVAL="1",
            REASONLAB_HEARTBEAT_TIMEOUT="30",
            REASONLAB_REAPER_INTERVAL="1",
            REASONLAB_DISPATCH_INTERVAL="0.5",
            REASONLAB_REDISPATCH_AFTER="20",
            REASONLAB_MLFLOW_TRACKING_URI=f"sqlite:///{home / 'mlflow.db'}",
        )
        api = start_api(res, env)
        sweep = FaultSweep(res, args, api, rdb)
        try:
            sweep.start_worker()
            sweep.start_worker()
            sweep.note("started", f"API {api.url}, 2 workers, broker db {rdb}, Postgres db {db}")
            sweep.submit()
            sweep.kill_api()
            time.sleep(5)
            sweep.kill_worker()
            if not args.no_service_restarts:
                time.sleep(5)
                sweep.restart_postgres()
                time.sleep(5)
                sweep.restart_redis()
            last = 0.0
            deadline = time.monotonic() + args.timeout

            def finished() -> bool:
                nonlocal last
                runs = sweep.runs()
                if time.monotonic() - last > 15:
                    last = time.monotonic()
                    sweep.note("waiting", sweep.status_line())
                return all(r["status"] in FINISHED for r in runs)

            wait_until(finished, max(1.0, deadline - time.monotonic()), "every run to finish", interval=1)
            sweep.note("finished", sweep.status_line())
            sweep.wait_mirrored(120)
            checks, rows = sweep.check()
        except BaseException:
            res.keep_logs = True
            raise
        headers = [
            "run",
            "status",
            "attempt",
            "resumed from",
            "platform loss",
            "platform final",
            "MLflow",
            "MLflow loss entries",
            "MLflow loss steps",
            "MLflow final",
            "values = platform",
        ]
        print()
        print(table(["t (s)", "event", "detail"], [[f"{t:.1f}", e, d] for t, e, d in sweep.timeline]))
        print()
        print(table(headers, rows))
        print()
        print(
            table(
                ["check", "result", "detail"],
                [[name, "PASS" if ok else "FAIL", detail] for name, ok, detail in checks],
            )
        )
        failed = [name for name, ok, _ in checks if not ok]
        print(f"\n{'FAIL' if failed else 'PASS'}: {len(checks) - len(failed)} of {len(checks)} checks passed")
        if failed:
            res.keep_logs = True
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
