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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench._common import PYTHON, ROOT, Resources, free_port, pg_url, reasonlab_env, wait_http
from bench.load import misbehave
from bench.load.generator import KEYS, Plan, dashboard, worker_heartbeat, worker_metrics
from bench.load.misbehave import Misbehaver, create_members
from bench.load.profiler import ApiProfile
from bench.load.proxy import start_nginx
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
    server: dict[str, Any] = {"host": "127.0.0.1", "port": port, "log_level": level, "access_log": False}
    server.update(_forwarded(os.environ.get("REASONLAB_TRUSTED_PROXIES", "")))
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


def _forwarded(trusted: str) -> dict[str, Any]:
    """Whose X-Forwarded-For uvicorn believes, as ``reasonlab api`` decides it (cli/server.py): the
    trusted proxies only, no one without them (uvicorn alone would believe any process on 127.0.0.1)."""
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": trusted}


# -- driver ------------------------------------------------------------------------------------------


@dataclass
class Setup:
    url: str  # where the clients go: the API, or nginx in front of it (--nginx)
    token: str
    worker_token: str
    username: str
    password: str
    proc: subprocess.Popen[bytes]
    db: str
    control: Path | None
    api_url: str = ""
    members: list[Misbehaver] = field(default_factory=list)
    project_id: int = 0
    ingest: subprocess.Popen[bytes] | None = None  # --ingest: the API process the runs' writes go to
    proxy_log: Path | None = None  # --nginx: its timing log (bench/load/proxy.py)


def start(res: Resources, args: argparse.Namespace) -> Setup:
    db = res.database("db")
    settings = dict(item.split("=", 1) for item in args.api_setting)
    env = reasonlab_env(res, db, **{f"REASONLAB_{name.upper()}": value for name, value in settings.items()})
    out = subprocess.run([PYTHON, "-c", _BOOTSTRAP], env=env, cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"migrate/ensure_admin failed:\n{out.stderr[-3000:]}")
    creds = json.loads(out.stdout.strip().splitlines()[-1])
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env["REASONLAB_API_URL"] = url
    if args.nginx:  # the API believes X-Forwarded-For from the proxy only, as compose's api service
        env["REASONLAB_TRUSTED_PROXIES"] = "127.0.0.1"
    members: list[Misbehaver] = []
    project_id = 0
    if args.misbehave:
        members, project_id = create_members(env, args.misbehave)
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
        argv = _uvicorn_argv(port, env, args.api_processes)
    # --api-nice: the people's API yields the CPU to the ingest process under contention
    if args.api_nice:
        argv = ["nice", "-n", str(args.api_nice), *argv]
    proc = res.process("api", argv, env)
    wait_http(f"{url}/api/v1/health", proc, what="ReasonLab API")
    if args.api_processes > 1:  # every worker process answers before the load starts
        deadline = time.monotonic() + 120
        while len(session_pids(proc.pid)) < args.api_processes + 1 and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(3)
    ingest = None
    ingest_port = None
    # compose's `ingest` service: one more API process (background loops off, as in every run)
    if args.ingest:
        ingest_port = free_port()
        ingest = res.process("ingest", _uvicorn_argv(ingest_port, env, 1), env)
        wait_http(f"http://127.0.0.1:{ingest_port}/api/v1/health", ingest, what="ReasonLab ingest API")
    client_url, proxy_log = start_nginx(res, port, ingest_port) if args.nginx else (url, None)
    return Setup(
        client_url,
        creds["token"],
        env["REASONLAB_WORKER_TOKEN"],
        creds["username"],
        creds["password"],
        proc,
        db,
        control,
        api_url=url,
        members=members,
        project_id=project_id,
        ingest=ingest,
        proxy_log=proxy_log,
    )


def _uvicorn_argv(port: int, env: dict[str, str], processes: int) -> list[str]:
    """``uvicorn`` serving our app on a loopback port with ``processes`` workers, as the load test starts
    the API (and, with --ingest, the ingest process)."""
    argv = [PYTHON, "-m", "uvicorn", "backend.main:create_app", "--factory", "--host", "127.0.0.1"]
    # info, no access log: with N processes the supervisor's "Child process [..] died" (a worker that did
    # not answer its 5 s health check is killed, its connections dropped) is an INFO line
    level = "info" if processes > 1 else "warning"
    argv += ["--port", str(port), "--log-level", level, "--no-access-log"]
    trusted = env.get("REASONLAB_TRUSTED_PROXIES", "")
    argv += ["--proxy-headers", "--forwarded-allow-ips", trusted] if trusted else ["--no-proxy-headers"]
    if processes > 1:
        argv += ["--workers", str(processes)]
    return argv


def make_client(base: str, token: str, connections: int, source: str | None = None) -> httpx.AsyncClient:
    """One simulated worker's or browser's client; ``source``: the loopback address it connects from
    (with --nginx or --misbehave each client has its own, as separate hosts would: the proxy limits
    connections per address, and the login throttle counts per address)."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(
        base_url=base + "/api/v1",
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx.Timeout(60.0),
        limits=limits,
        transport=httpx.AsyncHTTPTransport(local_address=source, limits=limits, verify=False)
        if source
        else None,
        verify=False,  # plain http on loopback: no TLS context per client
    )


# the loopback networks the well-behaved clients connect from (127.0.3/4.x are the misbehavers'): the
# report tells their requests apart by them in the proxy's log
WRITERS_NET, BROWSERS_NET = "127.0.1.", "127.0.2."


def _source(args: argparse.Namespace, net: str, i: int) -> str | None:
    """The address of the i-th client of ``net`` (WRITERS_NET, BROWSERS_NET)."""
    if not (args.nginx or args.misbehave):
        return None
    return f"{net}{i % 250 + 1}"


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
    workers = [
        make_client(setup.url, setup.worker_token, 2, _source(args, WRITERS_NET, i)) for i in range(len(runs))
    ]
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
        dashboards.append(
            make_client(setup.url, r.json()["access_token"], 6, _source(args, BROWSERS_NET, len(dashboards)))
        )
    await admin.aclose()
    await misbehave.prepare(setup.members, setup.url, setup.worker_token)

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
        metric_body=args.metric_body,
    )
    sampler = Sampler([p.pid for p in (setup.proc, setup.ingest) if p is not None], setup.db)
    posted: list[collections.deque[tuple[int, float]] | None] = [
        collections.deque() if i < args.dashboards else None for i in range(args.workers)
    ]
    progress = [[0] for _ in runs]
    info["runs"] = [run["id"] for run in runs]
    info["progress"] = progress
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
    tasks += misbehave.tasks(setup.members, setup.url, setup.project_id, end)
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


def count_points(db: str, run_ids: list[int], progress: list[list[int]], nkeys: int) -> dict[str, int]:
    """Every acknowledged point is in the database, counted: a simulated worker's step advances only when
    its batch got a 2xx, so its acknowledged points are steps 0..acked-1 of each of its keys, and its run
    must hold acked x keys rows below that step (a batch that timed out and was stored anyway is re-sent
    from the same step, overwriting; it adds rows at or past ``acked``, never below)."""
    import psycopg

    acked = [p[0] for p in progress]
    with psycopg.connect(pg_url(db, "postgresql")) as conn:
        rows = conn.execute(
            "SELECT v.run_id, v.acked, count(m.step) FROM unnest(%s::int[], %s::bigint[]) AS v(run_id, acked) "
            "LEFT JOIN metric m ON m.run_id = v.run_id AND m.step < v.acked GROUP BY v.run_id, v.acked",
            (run_ids, acked),
        ).fetchall()
        stored = conn.execute("SELECT count(*) FROM metric WHERE run_id = ANY(%s)", (run_ids,)).fetchone()
    expected = sum(int(a) * nkeys for _, a, _ in rows)
    found = sum(int(n) for _, _, n in rows)
    lost = sum(max(0, int(a) * nkeys - int(n)) for _, a, n in rows)
    short = sum(1 for _, a, n in rows if int(n) < int(a) * nkeys)
    return {
        "acknowledged": expected,
        "found": found,
        "lost": lost,
        "runs_short": short,
        "stored_all": int(stored[0]) if stored else 0,
    }
