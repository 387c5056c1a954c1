"""One key with 1,000,000 points: our downsampled query against MLflow's ``get_metric_history``, side by side.

    .venv/bin/python bench/metric_query.py                        # 1,000,000 points
    .venv/bin/python bench/metric_query.py --points 200000 --repeats 5 --mlflow-repeats 2
    .venv/bin/python bench/metric_query.py --mlflow-load log_batch   # load MLflow through its API only

Setup (started and removed by this script): our API (uvicorn, 1 process) and ``mlflow server --workers 1``,
each on a fresh database of the same Postgres. The series is a noisy decaying loss curve, values rounded
to float32 (what ``loss.item()`` gives), steps 0..N-1, key ``loss``.
  ours    loaded through ``POST /runs/{id}/metrics`` in batches of 10,000.
  mlflow  ``--mlflow-load sql`` (default): the first 1,000 points through ``log_batch`` (so MLflow makes
          the run's rows itself), the rest by binary COPY into MLflow's ``metrics`` table with exactly the
          columns ``log_batch`` writes (key, value, timestamp, step, is_nan, run_uuid), then its
          ``latest_metrics`` row is set to the last point, as ``log_batch`` would. ``log_batch``: all of it
          through the API, 1,000 per call (slow: ~1,000 calls).
  Both tables then get ``VACUUM ANALYZE`` (what autovacuum does to a run written over hours); our first
  query before it is reported too.
Timed (httpx / MlflowClient from this process, keep-alive, one warm-up first), side by side per window:
  windows      full, 10%, 1% and 0.1% of the steps (the zooms start at the middle step)
  ours         GET /runs/{id}/metrics?keys=loss&max_points=1000[&step_min&step_max] (median of --repeats);
               buckets of min/max/last/count, read from the roll-ups kept at ingest for wide windows
  mlflow ui    MLflow's own sampled endpoint, the one its UI's charts call:
               /ajax-api/2.0/mlflow/metrics/get-history-bulk-interval?max_results=1000[&start_step&end_step]
               (a decimation: every ~Nth point, no min/max)
  mlflow full  MlflowClient.get_metric_history(run, "loss"): every point, paged by the client 25,000 a
               request (median of --mlflow-repeats; 0 skips it, ~1 min a call at 1M points).
Goals: ours <= 50 ms for every window and at least as fast as MLflow's sampled endpoint at every window;
ours full >= 20x faster than get_metric_history; our response < 100 KB on the wire.
"""

from __future__ import annotations

import argparse
import gzip
import math
import random
import struct
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
import psycopg

from bench._common import (
    Resources,
    machine,
    median,
    pg_url,
    reasonlab_env,
    start_api,
    start_mlflow,
    submit_diagnostic,
    table,
)

KEY = "loss"
OUR_BATCH = 10_000
MLFLOW_BATCH = 1_000


def loss_curve(n: int, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    f32 = struct.Struct("f")
    out = []
    for s in range(n):
        v = 2.5 * math.exp(-s / (n / 5)) + 0.1 + 0.05 * rng.gauss(0.0, 1.0)
        if rng.random() < 1e-4:
            v *= 10  # a rare spike, for the min/max buckets to keep
        out.append(f32.unpack(f32.pack(v))[0])
    return out


def load_ours(client: httpx.Client, values: list[float], t0_ms: int) -> int:
    run_id = int(submit_diagnostic(client, name="query")["id"])
    for i in range(0, len(values), OUR_BATCH):
        pts = [
            {"key": KEY, "step": s, "value": values[s], "time": _iso_ms(t0_ms + s)}
            for s in range(i, min(i + OUR_BATCH, len(values)))
        ]
        r = client.post(f"/runs/{run_id}/metrics", json={"points": pts})
        r.raise_for_status()
    return run_id


def _iso_ms(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def load_mlflow(ml: Any, db: str, values: list[float], t0_ms: int, how: str) -> str:
    from mlflow.entities import Metric

    exp_id = ml.create_experiment("bench-query")
    run_id: str = ml.create_run(exp_id).info.run_id
    api_part = len(values) if how == "log_batch" else min(MLFLOW_BATCH, len(values))
    for i in range(0, api_part, MLFLOW_BATCH):
        batch = [Metric(KEY, values[s], t0_ms + s, s) for s in range(i, min(i + MLFLOW_BATCH, api_part))]
        ml.log_batch(run_id, metrics=batch, synchronous=True)
    if api_part < len(values):
        with psycopg.connect(pg_url(db, "postgresql")) as conn:
            with (
                conn.cursor() as cur,
                cur.copy(
                    "COPY metrics (key, value, timestamp, step, is_nan, run_uuid) FROM STDIN (FORMAT BINARY)"
                ) as copy,
            ):
                copy.set_types(["varchar", "float8", "int8", "int8", "bool", "varchar"])
                for s in range(api_part, len(values)):
                    copy.write_row((KEY, values[s], t0_ms + s, s, False, run_id))
            last = len(values) - 1
            conn.execute(
                "UPDATE latest_metrics SET value = %s, timestamp = %s, step = %s, is_nan = false "
                "WHERE run_uuid = %s AND key = %s",
                (values[last], t0_ms + last, last, run_id, KEY),
            )
    return run_id


def vacuum(db: str, table_name: str) -> None:
    with psycopg.connect(pg_url(db, "postgresql"), autocommit=True) as conn:
        conn.execute(f"VACUUM ANALYZE {table_name}")


def count(db: str, sql: str, arg: Any) -> int:
    with psycopg.connect(pg_url(db, "postgresql")) as conn:
        row = conn.execute(sql, (arg,)).fetchone()
        return int(row[0]) if row else 0


def timed(fn: Any, repeats: int) -> tuple[list[float], Any]:
    fn()  # warm-up
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return times, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--max-points", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=9, help="timed queries per variant of ours")
    ap.add_argument(
        "--mlflow-repeats", type=int, default=3, help="timed get_metric_history calls (0: skip them)"
    )
    ap.add_argument("--mlflow-load", choices=["sql", "log_batch"], default="sql")
    args = ap.parse_args()

    n = args.points
    values = loss_curve(n)
    t0_ms = int(time.time() * 1000) - n
    print(f"machine: {machine()}")
    print(
        f"one key, {n:,} points; max_points={args.max_points}; windows full, 10%, 1%, 0.1% from step {n // 2:,}; "
        f"MLflow loaded via {args.mlflow_load}"
    )

    from mlflow.tracking import MlflowClient

    with Resources("query") as res:
        try:
            ours_db = res.database("ours")
            api = start_api(res, reasonlab_env(res, ours_db))
            ml_db = res.database("mlflow")
            ml_url = start_mlflow(res, ml_db)
            ml = MlflowClient(tracking_uri=ml_url)
            with api.client() as client, httpx.Client(base_url=ml_url, timeout=600) as mlhttp:
                t = time.perf_counter()
                rid = load_ours(client, values, t0_ms)
                print(f"  loaded ours in {time.perf_counter() - t:.1f} s", flush=True)
                t = time.perf_counter()
                mid = load_mlflow(ml, ml_db, values, t0_ms, args.mlflow_load)
                print(f"  loaded mlflow in {time.perf_counter() - t:.1f} s", flush=True)
                n_ours = count(ours_db, "SELECT count(*) FROM metric WHERE run_id = %s", rid)
                n_ml = count(ml_db, "SELECT count(*) FROM metrics WHERE run_uuid = %s", mid)
                if (n_ours, n_ml) != (n, n):
                    raise RuntimeError(f"stored ours={n_ours} mlflow={n_ml}, expected {n}")

                full = {"keys": KEY, "max_points": args.max_points}
                windows = {"full": (None, None)}
                for label, frac in (("10%", 10), ("1%", 100), ("0.1%", 1000)):
                    lo = n // 2
                    windows[label] = (lo, lo + max(1, n // frac) - 1)

                def ours(params: dict[str, Any]) -> httpx.Response:
                    r = client.get(f"/runs/{rid}/metrics", params=params)
                    r.raise_for_status()
                    return r

                def ours_window(label: str) -> dict[str, Any]:
                    lo, hi = windows[label]
                    return full if lo is None else {**full, "step_min": lo, "step_max": hi}

                def ml_window(label: str) -> dict[str, Any]:
                    lo, hi = windows[label]
                    return {} if lo is None else {"start_step": lo, "end_step": hi}

                t = time.perf_counter()
                ours(full)
                cold = time.perf_counter() - t
                vacuum(ours_db, "metric")
                vacuum(ours_db, "metric_rollup")
                vacuum(ml_db, "metrics")

                def ml_ui(extra: dict[str, Any]) -> httpx.Response:
                    r = mlhttp.get(
                        "/ajax-api/2.0/mlflow/metrics/get-history-bulk-interval",
                        params={"run_ids": mid, "metric_key": KEY, "max_results": args.max_points, **extra},
                    )
                    r.raise_for_status()
                    return r

                # interleaved: each repeat times every window, ours then MLflow's sampled endpoint on the
                # same window, so a burst of load from the machine's other users hits all of them alike
                calls: dict[str, Any] = {}
                for label in windows:
                    calls[f"ours {label}"] = lambda lab=label: ours(ours_window(lab))
                    calls[f"mlflow ui {label}"] = lambda lab=label: ml_ui(ml_window(lab))
                last: dict[str, httpx.Response] = {name: fn() for name, fn in calls.items()}  # warm-up
                times: dict[str, list[float]] = {name: [] for name in calls}
                for _ in range(args.repeats):
                    for name, fn in calls.items():
                        t = time.perf_counter()
                        last[name] = fn()
                        times[name].append(time.perf_counter() - t)
                results: dict[str, tuple[list[float], int, int]] = {}
                for name in calls:
                    r = last[name]
                    results[name] = (times[name], len(r.content), r.num_bytes_downloaded)
                    print(f"  {name:<20} median {median(times[name]) * 1e3:8.1f} ms", flush=True)
                for label in windows:
                    lo, hi = windows[label]
                    buckets = ours(ours_window(label)).json()["series"][KEY]["buckets"]
                    want = n if lo is None else hi - lo + 1
                    if len(buckets) > args.max_points or sum(b["count"] for b in buckets) != want:
                        raise RuntimeError(f"ours {label}: bucket counts do not add up")
                body = ours(full)
                gz_full = len(gzip.compress(body.content, 9))

                hist: list[int] = []

                def ml_full() -> None:
                    h = ml.get_metric_history(mid, KEY)
                    hist.append(len(h))

                if args.mlflow_repeats > 0:
                    ts, _ = timed(ml_full, args.mlflow_repeats)
                    if any(h != n for h in hist):
                        raise RuntimeError(f"mlflow returned {hist} points, expected {n}")
                    raw = mlhttp.get(
                        "/api/2.0/mlflow/metrics/get-history", params={"run_id": mid, "metric_key": KEY}
                    )  # size only (one page)
                    results["mlflow get_metric_history"] = (ts, len(raw.content), raw.num_bytes_downloaded)
                    print(f"  {'mlflow get_metric_history':<20} median {median(ts):8.2f} s", flush=True)
        except BaseException:
            res.keep_logs = True
            for label in ("api", "mlflow"):
                print(f"--- {label} log tail ---\n{res.log_tail(label)}", file=sys.stderr)
            raise

    rows = []
    goal_ms, goal_vs = [], []
    for label, (lo, hi) in windows.items():
        o_ts, o_size, o_wire = results[f"ours {label}"]
        m_ts, m_size, _ = results[f"mlflow ui {label}"]
        o, m = median(o_ts), median(m_ts)
        goal_ms.append(o <= 0.050)
        goal_vs.append(o <= m)
        rows.append(
            [
                label if lo is None else f"{label} (steps {lo:,}..{hi:,})",
                f"{o * 1e3:,.1f}",
                f"{min(o_ts) * 1e3:,.1f}-{max(o_ts) * 1e3:,.1f}",
                f"{m * 1e3:,.1f}",
                f"{min(m_ts) * 1e3:,.1f}-{max(m_ts) * 1e3:,.1f}",
                f"{m / o:.1f}x",
                f"{o_size / 1024:,.1f} / {o_wire / 1024:,.1f}",
                f"{m_size / 1024:,.1f}",
            ]
        )
    print()
    print(
        table(
            [
                "window",
                "ours median ms",
                "ours range",
                "mlflow ui median ms",
                "mlflow ui range",
                "mlflow / ours",
                "ours body / wire KiB",
                "mlflow body KiB",
            ],
            rows,
        )
    )
    print(f"\nours full before VACUUM ANALYZE (first query after loading): {cold * 1e3:.0f} ms")
    full_size = results["ours full"][1]
    print(
        f"ours full body {full_size:,} bytes ({full_size / 1024:.1f} KiB); gzip -9 of it {gz_full:,} bytes; "
        f"wire = what httpx downloaded (Accept-Encoding: gzip): {results['ours full'][2]:,} bytes"
    )
    per_window = ", ".join(f"{lab} {median(results['ours ' + lab][0]) * 1e3:.1f} ms" for lab in windows)
    print(f"goal <= 50 ms for every window: {'met' if all(goal_ms) else 'MISSED'} ({per_window})")
    print(
        f"goal at least as fast as MLflow's sampled endpoint at every window: {'met' if all(goal_vs) else 'MISSED'}"
    )
    if "mlflow get_metric_history" in results:
        base = median(results["mlflow get_metric_history"][0])
        ratio = base / median(results["ours full"][0])
        print(
            f"goal >= 20x faster than get_metric_history ({base:.1f} s): "
            f"{'met' if ratio >= 20 else 'MISSED'} ({ratio:,.0f}x)"
        )
    print(f"goal body < 100 KB on the wire: {'met' if results['ours full'][2] < 100_000 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
