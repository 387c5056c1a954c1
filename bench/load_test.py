"""Load test of the API: simulated workers posting metrics and dashboards watching runs, on Postgres.

    .venv/bin/python bench/load_test.py                          # 50 workers, 20 dashboards, 10 minutes
    .venv/bin/python bench/load_test.py --duration 120 --api-processes 2
    .venv/bin/python bench/load_test.py --duration 120 --profile # + where the API's time goes
    .venv/bin/python bench/load_test.py --api-processes 2 --nginx --misbehave 5   # the budgets under load

Setup (started and removed by this script): a fresh Postgres database, our API under uvicorn
(``--api-processes`` N = ``uvicorn --workers N``; background loops off: nothing is dispatched, the runs
are claimed by the simulated workers), one experiment of ``--workers`` diagnostic runs (a seed sweep).
Every simulated worker claims its run with the worker token as ``reasonlab worker`` does (the run's
``attempt``), then, until the end:
  metrics    every ``--flush-interval`` s one ``POST /runs/{id}/metrics`` with ``attempt`` (the compact body,
             as the platform's workers send it; ``--metric-body json`` for JSON objects): a uniform
             random ``--points-min``..``--points-max`` points (``--keys`` keys x steps, step-major, with a
             time), scaled up by the time the previous post took when that was longer than the interval
             (the SDK's writer buffers while it posts), at most 10,000;
  heartbeat  every ``--heartbeat-interval`` s ``POST /runs/{id}/heartbeat`` with ``attempt`` and progress.
Every dashboard client logs in (a JWT, as the browser) and watches run i of the experiment the way the
dashboard's pages do (frontend/src/hooks):
  stream     ``POST /runs/{id}/read-ticket`` then ``GET /runs/{id}/events?ticket=...`` held open (reopened
             2 s after a failure, as the dashboard does);
  charts     per key, ``GET /runs/{id}/metrics?keys=<key>&max_points=1000`` once the stream reported a
             step past what the chart drew, at most every 1 s (LIVE_REFRESH_MS);
  polls      ``GET /experiments/{id}`` every 1.5 s (livePollMs(50)), ``GET /runs/{id}/metric-keys``
             every 3 s, ``GET /runs/{id}/results`` every 5 s, and ``GET /runs?experiment_id=`` every 5 s
             (the SDK's/CLI's list; the dashboard itself reads the runs from the experiment).
The load generator is one asyncio process (httpx, one client per simulated worker or browser). The
first ``--warmup`` s are not counted. Recorded: latency per route (p50/p90/p99/max, client side, from
the request sent to the whole answer read; for the event stream, to its response headers), errors
(non-2xx, timeouts, dropped streams), stream delay (a metric batch's answer -> the stream's ``metrics``
event that reports its step), and every ``--sample-every`` s: the API processes' RSS and CPU, the CPU of
the Postgres backends of our database, the generator's own CPU and event-loop lag, the load average.

``--profile`` (one API process) runs uvicorn inside this script (``--as-api``, the same app and server
settings) with: per-route accounting (time to the response headers, SQL statements and their time,
waits for a pooled connection, hops to the thread pool with the wait for a thread and the time in it),
the thread pool's occupancy, the event loop's lag, per-thread CPU, and a wall-clock stack sampler
(every thread every ``--sample-ms``). It is reported over the measured window (from the end of the
warm-up until the last request came back).

``--nginx`` puts the compose deployment's reverse proxy in front of the API on loopback: nginx with
docker/nginx/reasonlab.conf, only its listen address and upstream replaced (bench/load/proxy.py); the API
then believes X-Forwarded-For from 127.0.0.1 only (REASONLAB_TRUSTED_PROXIES, as compose's api service
does for the proxy's address). With ``--nginx`` or ``--misbehave`` every simulated worker and browser
connects from its own loopback address (127.0.1.x, 127.0.2.x), as separate hosts would: the proxy limits
connections per address (128), and the login throttle counts per address.

``--misbehave N`` (0-5) adds N project members, each with its own credential and loopback address,
breaking the per-request budgets at once for the whole test (bench/load/misbehave.py): slow dataset
uploads, slow artifact uploads through a run token, costly ``GET /runs?q=`` queries, 64 MiB metric bodies
sent slowly, and password guessing at another account from 64 addresses. Bounded in count and rate, on
loopback only. Then reported besides: the well-behaved writers' and readers' latencies (p50/p99/max) and
5xx, the misbehavers' outcomes by status, lost points (every acknowledged point counted in the database at
the end) and the API's RSS, with a verdict line.

``--what-if`` (experiments, not our code; with any number of processes) patches the API before
``create_app()``: ``admit=N`` (at most N requests in flight per process, event streams excepted),
``pool=N``, ``threads=N``, ``gzip=L``, ``keys-from-latest``. A request that takes longer than 60 s counts
as an error (timeout); a request still in flight 60 s after the end is cut off and reported.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import Resources, machine
from bench.load.driver import api_entry, count_points, drive, start
from bench.load.generator import KEYS
from bench.load.recorder import Recorder
from bench.load.report import api_log_summary, budget_report, nginx_log_summary, profile_report, report
from bench.load.sampling import uptime_line
from bench.load.whatif import WHAT_IFS


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=600.0, help="measured seconds (default 10 minutes)")
    ap.add_argument("--warmup", type=float, default=15.0, help="seconds of load before measuring")
    ap.add_argument("--workers", type=int, default=50, help="simulated workers (= runs)")
    ap.add_argument("--dashboards", type=int, default=20, help="simulated dashboard clients")
    ap.add_argument("--keys", type=int, default=4, help=f"metric keys per run (1..{len(KEYS)})")
    ap.add_argument("--points-min", type=int, default=100)
    ap.add_argument("--points-max", type=int, default=1000)
    ap.add_argument("--flush-interval", type=float, default=1.0, help="seconds between a worker's batches")
    ap.add_argument(
        "--metric-body",
        choices=("compact", "json"),
        default="compact",
        help="the metric posts' body: compact (reasonlab_sdk.points, what the platform's workers and the SDK "
        "send) or json (a list of point objects, what other clients may send)",
    )
    ap.add_argument("--heartbeat-interval", type=float, default=5.0)
    ap.add_argument("--poll-experiment", type=float, default=1.5, help="GET /experiments/{id} period")
    ap.add_argument("--api-processes", type=int, default=1, help="uvicorn --workers")
    ap.add_argument("--profile", action="store_true", help="profile the API (one process)")
    ap.add_argument("--sample-ms", type=float, default=50.0, help="--profile's stack sampling period")
    ap.add_argument("--sample-every", type=float, default=5.0, help="seconds between RSS/CPU/load samples")
    ap.add_argument("--print-every", type=float, default=60.0, help="seconds between progress lines")
    ap.add_argument(
        "--what-if",
        default="",
        help="experiments, not our code, comma-separated: " + "; ".join(WHAT_IFS.values()),
    )
    ap.add_argument(
        "--nginx",
        action="store_true",
        help="docker/nginx/reasonlab.conf's nginx in front of the API (loopback)",
    )
    ap.add_argument(
        "--ingest",
        action="store_true",
        help="with --nginx: one more API process for the runs' writes, as compose's `ingest` service",
    )
    ap.add_argument(
        "--misbehave", type=int, default=0, help="misbehaving members at once, 0-5 (bench/load/misbehave.py)"
    )
    ap.add_argument(
        "--api-setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an API setting, REASONLAB_<NAME> (e.g. MAX_READS_IN_FLIGHT=20), for side-by-side runs; repeatable",
    )
    ap.add_argument(
        "--api-nice",
        type=int,
        default=0,
        metavar="N",
        help="with --ingest: the people's API process at nice N (0-19), the ingest process at 0: a lower CPU "
        "weight for the reads under contention, as compose's cpu_shares would give it (not set there)",
    )
    ap.add_argument(
        "--generator-nice",
        type=int,
        default=0,
        metavar="N",
        help="the load generator's own nice value once the servers have started (-20..19; below 0 needs root): "
        "a negative one stands for clients on other machines, whose own delays are no part of the API's latency",
    )
    ap.add_argument("--keep-logs", action="store_true")
    ap.add_argument("--as-api", nargs=2, metavar=("PORT", "CONTROL_DIR"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.as_api:
        return api_entry(
            int(args.as_api[0]), args.as_api[1], args.sample_ms, args.what_if, args.api_processes
        )
    if args.profile and args.api_processes != 1:
        ap.error("--profile runs one API process")
    if not 0 <= args.misbehave <= 5:
        ap.error("--misbehave takes 0 to 5")
    if not 1 <= args.keys <= len(KEYS) or args.dashboards > args.workers:
        ap.error("--keys out of range, or more dashboards than runs")
    if args.ingest and not args.nginx:
        ap.error("--ingest needs --nginx (the proxy sends it the runs' writes)")
    if args.api_nice and not args.ingest:
        ap.error("--api-nice needs --ingest (it weighs the API against the ingest process)")
    if not -20 <= args.generator_nice <= 19:
        ap.error("--generator-nice takes -20 to 19")
    if not 0 <= args.api_nice <= 19:
        ap.error("--api-nice takes 0 to 19")
    if any("=" not in item or not item.split("=", 1)[0].isidentifier() for item in args.api_setting):
        ap.error("--api-setting takes NAME=VALUE")

    print(f"machine: {machine()}")
    print(f"uptime at start: {uptime_line()}")
    print(
        f"{args.workers} workers x {args.points_min}-{args.points_max} points every {args.flush_interval} s "
        f"({args.keys} keys) + heartbeat every {args.heartbeat_interval} s; {args.dashboards} dashboards; "
        f"{args.api_processes} API process(es){' under the profiler' if args.profile else ''}"
        f"{'; WHAT-IF (not our code): ' + args.what_if if args.what_if else ''}"
        f"{'; behind nginx (docker/nginx/reasonlab.conf)' if args.nginx else ''}"
        f"{' + 1 ingest API process for the runs writes' if args.ingest else ''}"
        f"{f' (the API at nice {args.api_nice})' if args.api_nice else ''}"
        f"{f'; the generator at nice {args.generator_nice}' if args.generator_nice else ''}"
        f"{f'; {args.misbehave} misbehaving member(s)' if args.misbehave else ''}"
        f"{'; settings ' + ' '.join(args.api_setting) if args.api_setting else ''}; "
        f"{args.duration:.0f} s measured after {args.warmup:.0f} s"
    )
    rec = Recorder()
    with Resources("load") as res:
        res.keep_logs = args.keep_logs
        try:
            setup = start(res, args)
            if args.generator_nice:  # the servers started above keep their own (inherited before this)
                os.setpriority(os.PRIO_PROCESS, 0, args.generator_nice)
            sampler, info = asyncio.run(drive(args, setup, rec))
            print(f"uptime at end: {uptime_line()}")
            report(args, rec, sampler, setup, info)
            points = count_points(setup.db, info["runs"], info["progress"], args.keys)
            budget_report(args, rec, sampler, setup, points)
            if setup.control is not None:
                profile_report(setup.control)
        except BaseException:
            res.keep_logs = True
            print(f"--- api log tail ---\n{res.log_tail('api')}", file=sys.stderr)
            raise
        api_log_summary(res.logs / "api.log")
        if args.ingest:
            api_log_summary(res.logs / "ingest.log", "ingest API")
        nginx_log_summary(res.logs / "nginx.log")
    return 0


if __name__ == "__main__":
    sys.exit(main())
