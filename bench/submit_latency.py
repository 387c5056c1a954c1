"""Submit-to-running latency with Redis and an idle worker.

    .venv/bin/python bench/submit_latency.py                  # 20 runs, one at a time
    .venv/bin/python bench/submit_latency.py --runs 10 --gap 2 --redis-db 11

Setup (started and removed by this script): our API (uvicorn, background loops on: dispatcher + reaper,
REASONLAB_DISPATCH_INTERVAL default 1 s unless --dispatch-interval) on a fresh Postgres database, broker
redis://127.0.0.1:6379/<db> (the first empty db from --redis-db up; FLUSHDB of that db at the end), and one
``reasonlab worker`` (Celery prefork, concurrency 1, a fresh child per task). One untimed warm-up run
first, so the worker is up and consuming (and MLflow's sqlite mirror exists). Then --runs diagnostic runs
(spec {"train": {"steps": 5}}) are submitted one at a time with POST /experiments, each after the previous
one has finished (+ --gap seconds).

Latency of a run = its ``started_at`` (server time, set by the worker's claim) minus the moment the POST
returned in this process (same host, same clock). The breakdown per run:
  post -> dispatched   POST returned -> ``dispatched_at`` (dispatcher woken by the submit, send_task)
  dispatched -> received  -> the worker log's "Task runs.execute[...] received" (Redis, Celery consumer)
  received -> started     -> ``started_at``: hand-off to the pool child, child's API client, claim round trip
Goal: median < 1 s.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
import psycopg
import redis

from bench._common import (
    PYTHON,
    Resources,
    machine,
    median,
    pg_url,
    quantile,
    reasonlab_env,
    start_api,
    table,
)
from common.runs import FINISHED_STATUSES as FINISHED

SPEC = {"train": {"steps": 5}}
RECEIVED = re.compile(
    r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}): INFO/MainProcess\] Task runs\.execute\[run-(\d+)-"
)


class ChildWatch:
    """Polls /proc every 10 ms for the worker's pool children: (pid, first seen, last seen) each."""

    def __init__(self, parent: int) -> None:
        self.parent = parent
        self.seen: dict[int, list[float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _children(self) -> list[int]:
        out = []
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.parent and fields[0] != "Z":
                out.append(int(entry.name))
        return out

    def _loop(self) -> None:
        while not self._stop.wait(0.01):
            now = time.time()
            for pid in self._children():
                self.seen.setdefault(pid, [now, now])[1] = now

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def pick_redis_db(first: int) -> int:
    for db in range(first, 16):
        if redis.Redis(host="127.0.0.1", port=6379, db=db).dbsize() == 0:
            return db
    raise RuntimeError(f"no empty redis db in {first}..15")


def flush_redis(db: int) -> None:
    try:
        redis.Redis(host="127.0.0.1", port=6379, db=db).flushdb()
    except Exception as exc:  # pragma: no cover
        print(f"warning: FLUSHDB {db} failed: {exc}", file=sys.stderr)


def submit(client: httpx.Client, name: str) -> tuple[int, float, float]:
    t_send = time.time()
    r = client.post("/experiments", json={"name": name, "kind": "diagnostic", "spec": SPEC})
    t_ret = time.time()
    r.raise_for_status()
    return int(r.json()["runs"][0]["id"]), t_send, t_ret


def wait_finished(client: httpx.Client, run_id: int, timeout: float = 300.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run: dict[str, Any] = client.get(f"/runs/{run_id}").json()
        if run["status"] in FINISHED:
            return run
        time.sleep(0.05)
    raise RuntimeError(f"run {run_id} did not finish in {timeout:.0f} s")


def received_times(log: Path) -> dict[int, float]:
    """run id -> epoch seconds of Celery's "received" line (the worker logs local time)."""
    out: dict[int, float] = {}
    for line in log.read_text(errors="replace").splitlines():
        m = RECEIVED.match(line)
        if m and line.endswith("received"):
            local = dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f")
            out.setdefault(int(m.group(2)), local.timestamp())
    return out


def ts(value: Any) -> float:
    return float(value.timestamp()) if value is not None else float("nan")


# -- bench-only worker entry: `python bench/submit_latency.py --as-worker [--probe] [--pool-fix]` ------------


def _pool_fix() -> None:
    """Celery #9588: when a pool child exits (worker_max_tasks_per_child=1), the parent sees its sentinel
    close before the child can be reaped (exitcode still None); maintain_pool then finds nothing to
    replace, and the replacement child is forked only by the 5 s maintain_pool timer. Re-check every
    20 ms until the exit is reapable, then replace the child at once."""
    from celery.concurrency import asynpool

    original = asynpool.AsynPool._event_process_exit

    def _event_process_exit(self: Any, hub: Any, proc: Any) -> None:
        original(self, hub, proc)

        def retry(n: int) -> None:
            if proc.exitcode is None and n < 250:
                hub.call_later(0.02, retry, n + 1)
            else:
                self.maintain_pool()

        if proc.exitcode is None:
            hub.call_later(0.02, retry, 1)

    asynpool.AsynPool._event_process_exit = _event_process_exit


def _probe() -> None:
    """Log (to the worker log) when the child starts the task, builds its API client, and claims."""
    from reasonlab_sdk.client import ReasonLabClient
    from worker import executor

    execute, init, claim = executor.execute, ReasonLabClient.__init__, ReasonLabClient.claim

    def say(what: str, run_id: Any) -> None:
        print(f"PROBE {what} run={run_id} t={time.time():.6f}", file=sys.stderr, flush=True)

    def probed_execute(run_id: int, *a: Any, **kw: Any) -> Any:
        say("task_start", run_id)
        return execute(run_id, *a, **kw)

    def probed_init(self: Any, *a: Any, **kw: Any) -> None:
        init(self, *a, **kw)
        say("client_ready", "-")

    def probed_claim(self: Any, run_id: int, *a: Any, **kw: Any) -> Any:
        say("claim_sent", run_id)
        out = claim(self, run_id, *a, **kw)
        say("claim_done", run_id)
        return out

    executor.execute = probed_execute
    ReasonLabClient.__init__ = probed_init  # type: ignore[method-assign]
    ReasonLabClient.claim = probed_claim  # type: ignore[method-assign]


def worker_entry(probe: bool, pool_fix: bool) -> int:
    if pool_fix:
        _pool_fix()
    if probe:
        _probe()
    from cli.main import main as cli

    cli(["worker"])
    return 0


PROBE = re.compile(r"PROBE (\w+) run=(\S+) t=([\d.]+)$")


def probe_times(log: Path) -> dict[int, dict[str, float]]:
    """run id -> {task_start, client_ready, claim_sent, claim_done} (epoch seconds)."""
    out: dict[int, dict[str, float]] = {}
    current: int | None = None
    for line in log.read_text(errors="replace").splitlines():
        m = PROBE.search(line)
        if not m:
            continue
        what, run, t = m.group(1), m.group(2), float(m.group(3))
        if what == "task_start":
            current = int(run)
        if current is not None:
            out.setdefault(current, {}).setdefault(what, t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--gap", type=float, default=0.0, help="seconds to wait after a run finished")
    ap.add_argument("--redis-db", type=int, default=9, help="first redis db to try (must be empty)")
    ap.add_argument("--probe", action="store_true", help="worker logs task start / client / claim times")
    ap.add_argument(
        "--pool-fix", action="store_true", help="worker with the celery#9588 respawn fix (bench-only)"
    )
    ap.add_argument("--as-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--keep-logs", action="store_true", help="keep the API and worker logs (path printed)")
    ap.add_argument("--dispatch-interval", type=float, default=None, help="REASONLAB_DISPATCH_INTERVAL")
    args = ap.parse_args()
    if args.as_worker:
        return worker_entry(args.probe, args.pool_fix)

    print(f"machine: {machine()}")
    rdb = pick_redis_db(args.redis_db)
    print(
        f"{args.runs} runs of diagnostic {SPEC}, one at a time, gap {args.gap} s; redis db {rdb}; "
        f"dispatch interval {args.dispatch_interval or 'default (1 s)'}"
    )

    rows: list[dict[str, float]] = []
    with Resources("latency") as res:
        res.callback(flush_redis, rdb)
        res.keep_logs = args.keep_logs
        try:
            db = res.database("ours")
            extra = {
                "REASONLAB_BROKER_URL": f"redis://127.0.0.1:6379/{rdb}",
                "REASONLAB_RUN_BACKGROUND_LOOPS": "true",
            }
            if args.dispatch_interval is not None:
                extra["REASONLAB_DISPATCH_INTERVAL"] = str(args.dispatch_interval)
            api = start_api(res, reasonlab_env(res, db, **extra))
            worker_env = {**api.env, "REASONLAB_API_URL": api.url}
            if args.probe or args.pool_fix:
                argv = [PYTHON, __file__, "--as-worker"]
                argv += ["--probe"] * args.probe + ["--pool-fix"] * args.pool_fix
            else:
                argv = [str(Path(PYTHON).parent / "reasonlab"), "worker"]
            wproc = res.process("worker", argv, worker_env)
            watch = ChildWatch(wproc.pid)
            watch.start()
            res.callback(watch.stop)
            with api.client(timeout=60) as client:
                t = time.perf_counter()
                rid, _, _ = submit(client, "warm-up")
                run = wait_finished(client, rid)
                print(
                    f"  warm-up run {rid}: {run['status']} after {time.perf_counter() - t:.1f} s "
                    "(worker start included)",
                    flush=True,
                )
                if run["status"] != "succeeded":
                    raise RuntimeError(f"warm-up run failed: {run.get('error')}")
                time.sleep(max(args.gap, 1.0))
                posts: dict[int, tuple[float, float]] = {}
                for i in range(args.runs):
                    rid, t_send, t_ret = submit(client, f"latency-{i}")
                    posts[rid] = (t_send, t_ret)
                    run = wait_finished(client, rid)
                    if run["status"] != "succeeded":
                        raise RuntimeError(f"run {rid} {run['status']}: {run.get('error')}")
                    if args.gap:
                        time.sleep(args.gap)
                # the probe: what the child's client setup + one API round trip cost from here
                probe = []
                for _ in range(5):
                    t = time.perf_counter()
                    with httpx.Client(
                        base_url=api.url + "/api/v1", headers={"Authorization": f"Bearer {api.worker_token}"}
                    ) as c:
                        c.get(f"/runs/{rid}").raise_for_status()
                    probe.append(time.perf_counter() - t)
            with psycopg.connect(pg_url(db, "postgresql")) as conn:
                server = {
                    r[0]: r[1:]
                    for r in conn.execute(
                        "SELECT id, created_at, dispatched_at, started_at, finished_at FROM runs WHERE id = ANY(%s)",
                        (list(posts),),
                    )
                }
            got = received_times(res.logs / "worker.log")
            probes = probe_times(res.logs / "worker.log")
        except BaseException:
            res.keep_logs = True
            for label in ("api", "worker"):
                print(f"--- {label} log tail ---\n{res.log_tail(label)}", file=sys.stderr)
            raise

    children = sorted(watch.seen.values())  # [first seen, last seen] per pool child, by birth
    prev_finished = nan = float("nan")
    for rid, (t_send, t_ret) in sorted(posts.items()):
        _created, dispatched, started, finished = (ts(v) for v in server[rid])
        received = got.get(rid, float("nan"))
        born = [c for c in children if c[0] <= started]
        child = born[-1] if born else [float("nan")] * 2
        previous = born[-2] if len(born) > 1 else [float("nan")] * 2
        rows.append(
            {
                "run": rid,
                "post": t_ret - t_send,
                "latency": started - t_ret,
                "post_dispatched": dispatched - t_ret,
                "dispatched_received": received - dispatched,
                "received_started": started - received,
                # the pool child that ran it was forked this long after the message was received (0: ready)
                "child_wait": max(0.0, child[0] - received),
                "child_to_claim": started - max(child[0], received),
                # the previous run's child lived on this long after that run reported finished
                "prev_teardown": previous[1] - prev_finished,
                "run_time": finished - started,
                # with --probe: inside the child
                "child_task_start": probes.get(rid, {}).get("task_start", nan) - max(child[0], received),
                "child_client": probes.get(rid, {}).get("client_ready", nan)
                - probes.get(rid, {}).get("task_start", nan),
                "child_claim_rt": probes.get(rid, {}).get("claim_done", nan)
                - probes.get(rid, {}).get("claim_sent", nan),
            }
        )
        prev_finished = finished
    columns = {
        "POST ms": "post",
        "POST->running ms": "latency",
        "->dispatched": "post_dispatched",
        "->received": "dispatched_received",
        "->claimed": "received_started",
        "of which: wait for child": "child_wait",
        "child->claimed": "child_to_claim",
        "prev child exit after finish": "prev_teardown",
    }
    print()
    print(
        table(
            ["run", *columns, "run s"],
            [
                [r["run"], *(f"{r[c] * 1e3:.0f}" for c in columns.values()), f"{r['run_time']:.2f}"]
                for r in rows
            ],
        )
    )
    lat = [r["latency"] for r in rows]
    names = {
        "post_dispatched": "POST returned -> dispatched_at",
        "dispatched_received": "dispatched_at -> worker 'received'",
        "received_started": "'received' -> claimed (started_at)",
        "child_wait": "  of which: no pool child yet (fork after the last run's child exit)",
        "child_to_claim": "  of which: child ready -> claimed",
        "prev_teardown": "previous child alive after its run finished",
        "child_task_start": "  probe: child ready (or received) -> task starts in the child",
        "child_client": "  probe: ReasonLabClient() in the child",
        "child_claim_rt": "  probe: POST /claim round trip",
    }
    parts = [
        "post_dispatched",
        "dispatched_received",
        "received_started",
        "child_wait",
        "child_to_claim",
        "prev_teardown",
    ] + (["child_task_start", "child_client", "child_claim_rt"] if args.probe else [])
    print()
    print(
        table(
            ["", "median ms", "p90 ms", "max ms"],
            [
                [
                    "POST /experiments (request itself)",
                    *(
                        f"{f([r['post'] for r in rows]) * 1e3:.0f}"
                        for f in (median, lambda x: quantile(x, 0.9), max)
                    ),
                ],
                [
                    "POST returned -> running (started_at)",
                    *(f"{f(lat) * 1e3:.0f}" for f in (median, lambda x: quantile(x, 0.9), max)),
                ],
                *[
                    [
                        f"  {names[p]}",
                        *(
                            f"{f([r[p] for r in rows]) * 1e3:.0f}"
                            for f in (median, lambda x: quantile(x, 0.9), max)
                        ),
                    ]
                    for p in parts
                ],
                [
                    "probe: new httpx client + GET /runs/{id}",
                    f"{median(probe) * 1e3:.0f}",
                    f"{quantile(probe, 0.9) * 1e3:.0f}",
                    f"{max(probe) * 1e3:.0f}",
                ],
            ],
        )
    )
    m = median(lat)
    print(
        f"\ngoal median < 1 s: {'met' if m < 1 else 'MISSED'} (median {m * 1e3:.0f} ms, "
        f"p90 {quantile(lat, 0.9) * 1e3:.0f} ms, n={len(lat)})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
