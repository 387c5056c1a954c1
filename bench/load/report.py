"""What the load test prints: latency per route, errors, the machine, a per-minute timeline, the API's
profile (``--profile``) and its log."""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from bench._common import quantile, table
from bench.load.driver import BROWSERS_NET, WRITERS_NET, Setup
from bench.load.recorder import REQUEST_TIMEOUT, STREAM_OPENING, Recorder
from bench.load.sampling import Sampler


def pct(xs: list[float], q: float) -> float:
    return quantile(xs, q) * 1e3 if xs else float("nan")


def report(
    args: argparse.Namespace, rec: Recorder, sampler: Sampler, setup: Setup, info: dict[str, Any]
) -> None:
    t0, t1 = rec.measure_from, rec.measure_from + args.duration
    window = [s for s in sampler.samples if s.t >= t0 - 1e-6]
    span = window[-1].t - window[0].t if len(window) > 1 else float("nan")
    rows = []
    total_ok = total_err = 0
    for name in sorted(rec.routes):
        r = rec.routes[name]
        opened_once = name in STREAM_OPENING  # once per dashboard at the start (and after a failure)
        xs = [secs for t, secs in r.samples if opened_once or t0 <= t <= t1 + 120]
        errs = sum(n for what, n in r.errors.items() if not what.startswith("(warm-up)"))
        total_ok += len(xs)
        total_err += errs
        rows.append(
            [
                name + (" (all, warm-up included)" if opened_once else ""),
                f"{len(xs):,}",
                f"{len(xs) / args.duration:.1f}",
                f"{pct(xs, 0.5):.0f}",
                f"{pct(xs, 0.9):.0f}",
                f"{pct(xs, 0.99):.0f}",
                f"{max(xs) * 1e3:.0f}" if xs else "-",
                str(errs),
            ]
        )
    print()
    print(
        f"measured window: {args.duration:.0f} s (after {args.warmup:.0f} s warm-up); client-side latency, ms"
    )
    print(table(["route", "requests", "per s", "p50", "p90", "p99", "max", "errors"], rows))
    delays = [d for _, d in rec.stream_delay]
    print(
        f"stream delay (metric batch answered -> the stream's metrics event with its step): p50 {pct(delays, 0.5):.0f} ms, "
        f"p90 {pct(delays, 0.9):.0f} ms, p99 {pct(delays, 0.99):.0f} ms (n={len(delays):,})"
    )
    print(f"requests: {total_ok:,} answered, {total_err} errors; {rec.points:,} metric points stored")
    if info.get("unfinished"):
        print(f"  still in flight {REQUEST_TIMEOUT:.0f} s after the end (cut off): {info['unfinished']}")
    errs = collections.Counter(w for r in rec.routes.values() for w, n in r.errors.items() for _ in range(n))
    if errs:
        print(f"  errors by kind: {dict(errs)}")
    for name, r in sorted(rec.routes.items()):
        for ex in r.error_examples:
            print(f"  error {name}: {ex}")
    if window:
        rss = [sum(s.rss) for s in window]
        slope = _slope([(s.t - t0) / 60 for s in window], rss)
        per_proc = ", ".join(f"{x:.0f}" for x in window[-1].rss)
        a, b = window[0], window[-1]
        print(
            f"API RSS (all {len(b.rss)} process(es), MiB): start {rss[0]:.1f}, end {rss[-1]:.1f}, max {max(rss):.1f}, "
            f"min {min(rss):.1f}; trend {slope:+.2f} MiB/min (least squares over {len(window)} samples every "
            f"{args.sample_every:.0f} s); per process at the end: {per_proc}"
        )
        print(
            f"CPU over the window (share of one core): API {100 * (b.api_cpu - a.api_cpu) / span:.0f}%, Postgres "
            f"backends of our db {100 * (b.pg_cpu - a.pg_cpu) / span:.0f}%, load generator "
            f"{100 * (b.gen_cpu - a.gen_cpu) / span:.0f}% (machine: {os.cpu_count()} cores)"
        )
        loads = [s.load1 for s in window]
        print(
            f"load average (1 min) during the window: min {min(loads):.2f}, mean {sum(loads) / len(loads):.2f}, max {max(loads):.2f}"
        )
    lags = [lag for t, lag in sampler.loop_lag if t0 <= t <= t1]
    print(
        f"generator event-loop lag (100 ms probe): p50 {pct(lags, 0.5):.1f} ms, p99 {pct(lags, 0.99):.1f} ms, "
        f"max {max(lags, default=0) * 1e3:.0f} ms"
    )
    # the timeline: one row per minute
    print()
    rows = []
    step = max(60.0, args.sample_every)
    edges = [t0 + i * step for i in range(int(args.duration // step) + 1)] + [t1]
    edges = sorted(set(edges))
    for lo, hi in itertools.pairwise(edges):
        if hi - lo < 1:
            continue
        lat = [secs for r in rec.routes.values() for t, secs in r.samples if lo <= t < hi]
        ing = [secs for t, secs in rec.routes["POST /runs/{id}/metrics"].samples if lo <= t < hi]
        ss = [s for s in sampler.samples if lo <= s.t <= hi + 1e-6]
        if len(ss) < 2:
            continue
        d = ss[-1].t - ss[0].t
        rows.append(
            [
                f"{lo - t0:.0f}-{hi - t0:.0f}",
                f"{len(lat) / (hi - lo):.0f}",
                f"{pct(lat, 0.5):.0f}",
                f"{pct(lat, 0.99):.0f}",
                f"{pct(ing, 0.5):.0f}",
                f"{pct(ing, 0.99):.0f}",
                f"{sum(ss[-1].rss):.0f}",
                f"{100 * (ss[-1].api_cpu - ss[0].api_cpu) / d:.0f}",
                f"{100 * (ss[-1].pg_cpu - ss[0].pg_cpu) / d:.0f}",
                f"{100 * (ss[-1].gen_cpu - ss[0].gen_cpu) / d:.0f}",
                f"{max(s.load1 for s in ss):.1f}",
            ]
        )
    print(
        table(
            [
                "window s",
                "req/s",
                "all p50",
                "all p99",
                "ingest p50",
                "ingest p99",
                "RSS MiB",
                "API CPU%",
                "PG CPU%",
                "gen CPU%",
                "load",
            ],
            rows,
        )
    )


def _slope(xs: list[float], ys: list[float]) -> float:
    if len(xs) < 2:
        return float("nan")
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else float("nan")


def profile_report(control: Path) -> None:
    path = control / "report.json"
    deadline = time.monotonic() + 60
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    if not path.exists():
        print("profile: no report from the API process", file=sys.stderr)
        return
    p = json.loads(path.read_text())
    win = p["window_s"]
    print(f"\n## API profile ({win:.0f} s window, one process)\n")
    rows = []
    for name, a in sorted(p["routes"].items(), key=lambda kv: -kv[1]["headers_s"]):
        n = max(1, a["requests"])
        rows.append(
            [
                name,
                f"{a['requests']:,}",
                f"{1e3 * a['headers_s'] / n:.0f}",
                f"{a['hops'] / n:.1f}",
                f"{1e3 * a['hop_wait_s'] / n:.0f}",
                f"{1e3 * a['hop_run_s'] / n:.0f}",
                f"{a['sql_n'] / n:.1f}",
                f"{1e3 * a['sql_s'] / n:.1f}",
                f"{1e3 * a['pool_s'] / n:.1f}",
                f"{a['hop_run_s'] / win:.2f}",
            ]
        )
    print(
        "per request, mean (ms): server time to the response headers; thread-pool hops, wait for a thread and"
    )
    print(
        "time in threads; SQL statements and their time; wait for a pooled connection; thread time / window"
    )
    print("(for the event stream: per opened stream, its 0.5 s polls included)")
    print(
        table(
            [
                "route",
                "requests",
                "server ms",
                "hops",
                "hop wait ms",
                "in thread ms",
                "SQL n",
                "SQL ms",
                "pool wait ms",
                "thread s/s",
            ],
            rows,
        )
    )
    lag, busy, waiting = p["loop_lag"], p["pool_busy"], p["pool_waiting"]
    print(
        f"API event loop lag (50 ms probe): p50 {pct(lag, 0.5):.0f} ms, p99 {pct(lag, 0.99):.0f} ms, max "
        f"{max(lag, default=0) * 1e3:.0f} ms; thread pool (40 threads): busy mean {sum(busy) / max(1, len(busy)):.1f}, "
        f"max {max(busy, default=0)}; tasks waiting for a thread mean {sum(waiting) / max(1, len(waiting)):.1f}, "
        f"max {max(waiting, default=0)}"
    )
    print(
        "API CPU by thread (share of one core): "
        + ", ".join(
            f"{k} {100 * v / win:.0f}%" for k, v in sorted(p["threads_cpu"].items(), key=lambda kv: -kv[1])
        )
    )
    print("\ntop SQL by total time (route, statement, count, total s, mean ms):")
    for s in p["sql"][:15]:
        print(
            f"  {s['seconds']:7.1f} s {s['count']:>8,}x {1e3 * s['seconds'] / s['count']:6.2f} ms  {s['route']}: {s['statement'][:110]}"
        )
    for kind in ("event loop", "threads"):
        n = p["nsamples"].get(kind, 0)
        if not n:
            continue
        print(f"\nwall-clock samples, {kind} ({n:,} thread-samples): inclusive share, top frames")
        for name, c in p["incl"].get(kind, [])[:45]:
            print(f"  {100 * c / n:5.1f}%  {name}")
        print(
            "  leaf (where the thread was): "
            + "; ".join(f"{name} {100 * c / n:.1f}%" for name, c in p["leaf"][kind][:12])
        )


_LOG_LINE = re.compile(r"^(ERROR|WARNING|CRITICAL|INFO):|^\S*(Error|Exception)\b[:(]")


def api_log_summary(path: Path, label: str = "API") -> None:
    """What the API (or the ingest process) logged: error and warning lines and exception types, counted
    (digits masked)."""
    if not path.is_file():
        return
    counts: collections.Counter[str] = collections.Counter()
    for line in path.read_text(errors="replace").splitlines():
        if _LOG_LINE.match(line):
            counts[re.sub(r"\d+", "N", line)[:160]] += 1
    if counts:
        print(f"\n{label} log (lines counted, digits masked as N):")
        for line, n in counts.most_common(12):
            print(f"  {n:>6,}x  {line}")


WRITES = ("POST /runs/{id}/metrics", "POST /runs/{id}/heartbeat")


def _group(rec: Recorder, names: list[str], t0: float, t1: float) -> tuple[list[float], int, int, int]:
    """Latencies in the measured window (as the per-route table counts them), 5xx (warm-up included),
    5xx in the window, and other errors of the routes ``names``."""
    xs = [secs for n in names for t, secs in rec.routes[n].samples if t0 <= t <= t1 + REQUEST_TIMEOUT * 2]
    five = sum(k for n in names for w, k in rec.routes[n].errors.items() if re.search(r"HTTP 5\d\d", w))
    five_measured = sum(
        k
        for n in names
        for w, k in rec.routes[n].errors.items()
        if re.search(r"HTTP 5\d\d", w) and not w.startswith("(warm-up)")
    )
    other = sum(k for n in names for w, k in rec.routes[n].errors.items()) - five
    return xs, five, five_measured, other


_TIMING_LINE = re.compile(r"^(\S+) (\S+) (\S+) (\d{3}) ([\d.]+) ([\d.]+)$")
_RUN_WRITE = re.compile(r"^/api/v1/runs/\d+/(metrics|heartbeat)$")


def proxy_latencies(path: Path, since: float, until: float) -> dict[str, tuple[list[float], int]]:
    """The well-behaved clients' requests in nginx's timing log (bench/load/proxy.py) that ended between the
    monotonic times ``since`` and ``until``: per group, nginx's $request_time of each answer (seconds) and
    the number of 5xx. The writers and the browsers connect from networks of their own (driver.WRITERS_NET,
    BROWSERS_NET); a browser's reads are its GETs, the event stream (held open) aside, as the client-side
    table counts."""
    wall = time.time() - time.monotonic()  # the log's clock is the wall clock, the recorder's monotonic
    answered: dict[str, list[float]] = {}
    fives: collections.Counter[str] = collections.Counter()
    lines = path.read_text(errors="replace").splitlines() if path.is_file() else []
    for m in filter(None, map(_TIMING_LINE.match, lines)):
        addr, method, uri, status, secs, logged = m.groups()
        if not since + wall <= float(logged) <= until + wall:
            continue
        write = _RUN_WRITE.match(uri)
        if addr.startswith(WRITERS_NET) and method == "POST" and write:
            group = f"writers: POST {write.group(1)}"
        elif addr.startswith(BROWSERS_NET) and method == "GET" and not uri.endswith("/events"):
            group = "readers: all reads (event streams aside)"
        else:
            continue
        xs = answered.setdefault(group, [])
        if int(status) >= 500:
            fives[group] += 1
        else:
            xs.append(float(secs))
    return {group: (xs, fives[group]) for group, xs in answered.items()}


def budget_report(
    args: argparse.Namespace, rec: Recorder, sampler: Sampler, setup: Setup, points: dict[str, int]
) -> None:
    """The well-behaved clients beside the misbehaving members: latencies, 5xx, lost points, RSS."""
    t0, t1 = rec.measure_from, rec.measure_from + args.duration
    writes = [n for n in WRITES if n in rec.routes]
    reads = [n for n in rec.routes if n not in WRITES and n not in STREAM_OPENING]
    print(
        f"\n## Well-behaved clients{' beside ' + str(len(setup.members)) + ' misbehaving members' if setup.members else ''}\n"
    )
    rows = []
    verdict: dict[str, bool] = {}
    fives = 0
    opening = [n for n in STREAM_OPENING if n in rec.routes]
    for label, names, since in (
        ("writers: POST metrics", writes[:1], t0),
        ("writers: POST heartbeat", writes[1:], t0),
        ("writers: all writes", writes, t0),
        ("readers: all reads (event streams' opening aside)", reads, t0),
        # a stream is opened once per browser, at the start: its opening is counted from the start
        ("readers: event stream opening (ticket + headers; warm-up included)", opening, 0.0),
    ):
        xs, five, five_measured, other = _group(rec, names, since, t1)
        if label.startswith("writers: all") or label.startswith("readers"):
            fives += five
        if label == "writers: POST metrics":
            verdict["write p99 < 1 s (POST metrics)"] = bool(xs) and quantile(xs, 0.99) < 1.0
        rows.append(
            [
                label,
                f"{len(xs):,}",
                f"{pct(xs, 0.5):.0f}",
                f"{pct(xs, 0.99):.0f}",
                f"{max(xs) * 1e3:.0f}" if xs else "-",
                f"{five} ({five_measured} measured)",
                str(other),
            ]
        )
    print(
        table(["clients", "answered", "p50 ms", "p99 ms", "max ms", "5xx (in window)", "other errors"], rows)
    )
    if setup.proxy_log is not None:
        # the same requests timed by nginx: the load generator's own delays left out (its event loop's lag
        # before it reads an answer, which every client-side figure above holds)
        at_proxy = proxy_latencies(setup.proxy_log, t0, t1 + REQUEST_TIMEOUT * 2)
        rows = [
            [
                label,
                f"{len(xs):,}",
                f"{pct(xs, 0.5):.0f}",
                f"{pct(xs, 0.99):.0f}",
                f"{max(xs, default=0) * 1e3:.0f}",
                str(n5),
            ]
            for label, (xs, n5) in sorted(
                at_proxy.items(), key=lambda kv: (kv[0].startswith("readers"), kv[0])
            )
        ]
        print(
            "\nthe same clients at the proxy (nginx's $request_time: first byte of the request read to last byte of the answer sent):"
        )
        print(table(["clients", "answered", "p50 ms", "p99 ms", "max ms", "5xx"], rows))
        metrics = at_proxy.get("writers: POST metrics", ([], 0))[0]
        verdict["write p99 < 1 s at the proxy (POST metrics)"] = (
            bool(metrics) and quantile(metrics, 0.99) < 1.0
        )
    verdict["0 5xx for the well-behaved"] = fives == 0
    print(
        f"lost points: {points['lost']:,} (acknowledged {points['acknowledged']:,}, of them found in the "
        f"database {points['found']:,}; runs short: {points['runs_short']}; rows of the load's runs in all: "
        f"{points['stored_all']:,}, the generator counted {rec.points:,} acknowledged)"
    )
    verdict["0 lost points"] = points["lost"] == 0 and points["acknowledged"] == rec.points
    window = [s for s in sampler.samples if s.t >= t0 - 1e-6] or sampler.samples
    if window:
        rss = [sum(s.rss) for s in window]
        print(
            f"API RSS max over the window: {max(rss):.1f} MiB (all {len(window[-1].rss)} process(es)); "
            f"per process max: {', '.join(f'{max(s.rss[i] for s in window if i < len(s.rss)):.0f}' for i in range(len(window[-1].rss)))} MiB"
        )
    if setup.members:
        from bench.load.misbehave import describe

        print("\nmisbehaving members (each its own credential and source address), outcomes by status:")
        rows = []
        for m in setup.members:
            outcomes = ", ".join(f"{k}: {v:,}" for k, v in sorted(m.outcomes.items()))
            credential = f"run token of {m.username}'s run" if m.kind == "slow-artifacts" else m.username
            rows.append(
                [
                    m.kind,
                    credential,
                    m.source,
                    describe(m),
                    f"{m.requests:,}",
                    outcomes or "-",
                    f"{pct(m.answered, 0.5):.0f} / {max(m.answered) * 1e3:.0f}" if m.answered else "-",
                ]
            )
        print(
            table(
                ["misbehaver", "credential", "from", "what", "requests", "outcomes", "answer p50 / max ms"],
                rows,
            )
        )
        fives_seen = {
            m.kind: sum(v for k, v in m.outcomes.items() if k.startswith("HTTP 5")) for m in setup.members
        }
        print(f"misbehavers' 5xx (expected only 503 for costly queries or slow bodies): {fives_seen}")
    print("\nverdict: " + "; ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in verdict.items()))


_NGINX_LINE = re.compile(r"^\S+ \S+ \[(\w+)\] \d+#\d+: (?:\*\d+ )?(.*)$")


def nginx_log_summary(path: Path) -> None:
    """What nginx logged (``--nginx``): its messages counted by level and text, the request, the client
    and the digits left out (a client timeout, a closed connection, a limit reached, an upstream error)."""
    if not path.is_file():
        return
    counts: collections.Counter[str] = collections.Counter()
    for line in path.read_text(errors="replace").splitlines():
        m = _NGINX_LINE.match(line)
        if m is None:
            continue
        text = re.sub(r"\d+", "N", m.group(2).split(", client:")[0].split(" while ")[0])
        counts[f"[{m.group(1)}] {text[:140]}"] += 1
    if counts:
        print("\nnginx log (lines counted, digits masked as N):")
        for line, n in counts.most_common(15):
            print(f"  {n:>6,}x  {line}")
