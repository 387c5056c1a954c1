"""Setting up a load test (database, admin, the API under uvicorn or under ``--as-api``) and driving it."""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import random
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench._common import PYTHON, ROOT, Resources, free_port, reasonlab_env, wait_http
from bench.load.generator import KEYS, Plan, dashboard, worker_heartbeat, worker_metrics
from bench.load.profiler import ApiProfile
from bench.load.recorder import REQUEST_TIMEOUT, Recorder
from bench.load.sampling import Sample, Sampler, session_pids
from bench.load.whatif import apply_what_ifs

ENTRY = ROOT / "bench" / "load_test.py"  # the command; ``--as-api`` runs the API under it

_BOOTSTRAP = """
import json
from backend.bootstrap import ensure_admin, migrate
from backend.settings import Settings
s = Settings()
migrate(s)
c = ensure_admin(s)
print(json.dumps({"token": c.token, "username": c.username, "password": c.password}))
"""


def api_entry(port: int, control: str, sample_ms: float, what_if: str, processes: int) -> int:
    import uvicorn

    level = "info" if processes > 1 else "warning"
    server = {"host": "127.0.0.1", "port": port, "log_level": level, "access_log": False}
    if processes > 1:
        os.environ["RL_LOAD_WHATIF"] = what_if
        uvicorn.run("bench.load.whatif:whatif_factory", factory=True, workers=processes, **server)
        return 0
    wrap = apply_what_ifs(what_if)
    prof = ApiProfile(Path(control), sample_ms) if control != "-" else None
    if prof is not None:
        prof.install()
    from backend.main import create_app

    app = wrap(create_app())
    if prof is not None:
        app = prof.wrap(app)
        threading.Thread(target=prof.sampler, name="rl-load-sampler", daemon=True).start()
    uvicorn.run(app, timeout_graceful_shutdown=5, **server)
    return 0


# -- driver ------------------------------------------------------------------------------------------


@dataclass
class Setup:
    url: str
    token: str
    worker_token: str
    username: str
    password: str
    proc: subprocess.Popen[bytes]
    db: str
    control: Path | None


def start(res: Resources, args: argparse.Namespace) -> Setup:
    db = res.database("db")
    env = reasonlab_env(res, db)
    out = subprocess.run([PYTHON, "-c", _BOOTSTRAP], env=env, cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"migrate/ensure_admin failed:\n{out.stderr[-3000:]}")
    creds = json.loads(out.stdout.strip().splitlines()[-1])
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env["REASONLAB_API_URL"] = url
    control: Path | None = None
    if args.profile or args.what_if:
        if args.profile:
            control = res.tmp / "profile"
            control.mkdir()
        argv = [
            PYTHON,
            str(ENTRY),
            "--as-api",
            str(port),
            str(control or "-"),
            "--sample-ms",
            str(args.sample_ms),
        ]
        argv += ["--what-if", args.what_if, "--api-processes", str(args.api_processes)]
    else:
        argv = [PYTHON, "-m", "uvicorn", "backend.main:create_app", "--factory", "--host", "127.0.0.1"]
        # info, no access log: with N processes the supervisor's "Child process [..] died" (a worker that did
        # not answer its 5 s health check is killed, its connections dropped) is an INFO line
        level = "info" if args.api_processes > 1 else "warning"
        argv += ["--port", str(port), "--log-level", level, "--no-access-log"]
        if args.api_processes > 1:
            argv += ["--workers", str(args.api_processes)]
    proc = res.process("api", argv, env)
    wait_http(f"{url}/api/v1/health", proc, what="ReasonLab API")
    if args.api_processes > 1:  # every worker process answers before the load starts
        deadline = time.monotonic() + 120
        while len(session_pids(proc.pid)) < args.api_processes + 1 and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(3)
    return Setup(
        url,
        creds["token"],
        env["REASONLAB_WORKER_TOKEN"],
        creds["username"],
        creds["password"],
        proc,
        db,
        control,
    )


def make_client(base: str, token: str, connections: int) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=base + "/api/v1",
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx.Timeout(60.0),
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        verify=False,  # plain http on loopback: no TLS context per client
    )


async def drive(args: argparse.Namespace, setup: Setup, rec: Recorder) -> tuple[Sampler, dict[str, Any]]:
    keys = KEYS[: args.keys]
    info: dict[str, Any] = {}
    admin = make_client(setup.url, setup.token, 4)
    body = {
        "name": "load test",
        "kind": "diagnostic",
        "spec": {},
        "sweep": {"seeds": list(range(args.workers))},
    }
    r = await admin.post("/experiments", json=body)
    r.raise_for_status()
    exp = r.json()
    runs = sorted(exp["runs"], key=lambda x: x["index"])
    if len(runs) != args.workers:
        raise RuntimeError(f"the experiment has {len(runs)} runs, expected {args.workers}")
    info["experiment"] = exp["id"]
    workers = [make_client(setup.url, setup.worker_token, 2) for _ in runs]
    attempts = []
    for i, (run, client) in enumerate(zip(runs, workers, strict=True)):
        r = await client.post(
            f"/runs/{run['id']}/claim", json={"attempt": run["attempt"], "worker": f"load-{i}@bench"}
        )
        r.raise_for_status()
        claimed = r.json()
        attempts.append(claimed["attempt"])
        # the worker token only claims and releases: the run's own routes take the run token the claim
        # hands out, as the executor does
        client.headers["Authorization"] = f"Bearer {claimed['run_token']}"
    dashboards = []
    for _ in range(args.dashboards):
        r = await admin.post("/auth/login", json={"username": setup.username, "password": setup.password})
        r.raise_for_status()
        dashboards.append(make_client(setup.url, r.json()["access_token"], 6))
    await admin.aclose()

    t_start = time.monotonic()
    rec.measure_from = t_start + args.warmup
    end = rec.measure_from + args.duration
    plan = Plan(
        end=end,
        keys=keys,
        points_min=args.points_min,
        points_max=args.points_max,
        flush=args.flush_interval,
        heartbeat=args.heartbeat_interval,
        poll_experiment=args.poll_experiment,
        poll_keys=3.0,
        poll_results=5.0,
        poll_runs=5.0,
        chart_refresh=1.0,
    )
    sampler = Sampler(setup.proc.pid, setup.db)
    posted: list[collections.deque[tuple[int, float]] | None] = [
        collections.deque() if i < args.dashboards else None for i in range(args.workers)
    ]
    progress = [[0] for _ in runs]
    rng = random.Random(0)
    marks = {"started": False}
    last_print = [0.0, 0]

    def on_sample(s: Sample) -> None:
        if not marks["started"] and s.t >= rec.measure_from:
            marks["started"] = True
            if setup.control is not None:
                (setup.control / "start").touch()
        if s.t - last_print[0] >= args.print_every or s.t >= end:
            n = sum(len(r.samples) for r in rec.routes.values())
            errs = sum(sum(r.errors.values()) for r in rec.routes.values())
            rate = (n - last_print[1]) / max(1e-9, s.t - last_print[0]) if last_print[0] else 0.0
            print(
                f"  t={s.t - t_start:6.0f} s  API RSS {sum(s.rss):7.1f} MiB  load {s.load1:5.2f}  "
                f"{rate:6.1f} req/s  {rec.points:>11,} points  errors {errs}",
                flush=True,
            )
            last_print[0], last_print[1] = s.t, n

    tasks = [sampler.run(args.sample_every, end, rec, on_sample), sampler.lag_probe(end)]
    for i, (run, client) in enumerate(zip(runs, workers, strict=True)):
        wrng = random.Random(rng.random())
        tasks.append(worker_metrics(rec, client, plan, run["id"], attempts[i], wrng, posted[i], progress[i]))
        tasks.append(worker_heartbeat(rec, client, plan, run["id"], attempts[i], progress[i]))
    for i, client in enumerate(dashboards):
        tasks.append(
            dashboard(rec, client, plan, exp["id"], runs[i % len(runs)]["id"], posted[i % len(runs)])
        )
    gen0 = sum(os.times()[:2])
    running = [asyncio.ensure_future(t) for t in tasks]
    try:
        # every loop stops at the end; a request still in flight REQUEST_TIMEOUT s later is cut off
        _, pending = await asyncio.wait(running, timeout=args.warmup + args.duration + REQUEST_TIMEOUT + 15)
        info["unfinished"] = {k: v for k, v in rec.inflight.items() if v}
        for t in pending:
            t.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        for t in running:
            if not t.cancelled() and t.exception() is not None:
                raise t.exception()  # type: ignore[misc]
    finally:
        info["gen_cpu_total"] = sum(os.times()[:2]) - gen0
        if setup.control is not None:
            (setup.control / "stop").touch()
        for c in workers + dashboards:
            await c.aclose()
    return sampler, info
