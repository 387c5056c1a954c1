"""Metric ingest into Postgres: our ``POST /runs/{id}/metrics`` against MLflow's ``log_batch``, side by side.

    .venv/bin/python bench/metric_ingest.py                      # 200,000 points, 2 rounds
    .venv/bin/python bench/metric_ingest.py --points 50000 --rounds 1

What runs (all started and removed by this script):
  ours    uvicorn backend.main:create_app (1 process, background loops off) on a fresh Postgres database;
          one httpx client posts batches of 10,000 points {key, step, value, time} (our batch limit).
  mlflow  ``mlflow server --workers 1`` with its backend store on a second fresh database of the same
          Postgres (driver psycopg 3 through SQLAlchemy's postgresql+psycopg); one MlflowClient calls
          ``log_batch`` with 1,000 metrics (MLflow's per-call limit).
Both get the same points: ``--keys`` keys x (points / keys) steps, step-major (every key at step s, then
s + 1: what a training loop logs), the same random values and timestamps. Each round logs into a fresh
run on each side. The machine is shared, so the two sides are interleaved per chunk of 10,000 points:
our one POST, then MLflow's 10 log_batch calls for the same points (the order alternating chunk by
chunk), each chunk timed on its own; a side's time is the sum of its chunks, so a burst of load from
elsewhere hits both alike. An untimed warm-up batch into separate runs comes first. Wall time covers
client-side encoding, HTTP and the server up to the last answer; afterwards the rows in each database are
counted (every point must be there).
Every batch carries steps the run does not have yet, as a training loop logs them, so ours takes its
append path (one COPY straight into ``metric``); a batch that overwrites stored points (a retry, a
resumed run) takes the staging merge instead, which this script does not time (docs/benchmarks.md).
Goal: ours >= 10x MLflow's points/s.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

from bench._common import (
    Resources,
    machine,
    median,
    pg_url,
    quantile,
    reasonlab_env,
    start_api,
    start_mlflow,
    submit_diagnostic,
    table,
)

OUR_BATCH = 10_000
MLFLOW_BATCH = 1_000


def make_points(n: int, n_keys: int, seed: int = 0) -> list[tuple[str, int, float, float]]:
    """(key, step, value, unix time) step-major; ``n`` is rounded down to a multiple of ``n_keys``."""
    rng = random.Random(seed)
    keys = [f"metric_{k:02d}" for k in range(n_keys)]
    t0 = time.time() - 3600
    return [(key, step, rng.random(), t0 + step * 0.01) for step in range(n // n_keys) for key in keys]


def _iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, tz=dt.UTC).isoformat().replace("+00:00", "Z")


def ours_payloads(points: list[tuple[str, int, float, float]]) -> list[list[dict[str, Any]]]:
    """Batches as the worker sends them (worker/tracking.py): dicts with an ISO time."""
    rows = [{"key": k, "step": s, "value": v, "time": _iso(t)} for k, s, v, t in points]
    return [rows[i : i + OUR_BATCH] for i in range(0, len(rows), OUR_BATCH)]


def ours_compact_payloads(points: list[tuple[str, int, float, float]]) -> list[bytes]:
    """The same batches as the SDK's sender posts them: the compact body (reasonlab_sdk/points.py)."""
    from reasonlab_sdk import points as compact

    rows = [{"key": k, "step": s, "value": v, "time": t} for k, s, v, t in points]
    return [compact.encode(rows[i : i + OUR_BATCH]) for i in range(0, len(rows), OUR_BATCH)]


def mlflow_payloads(points: list[tuple[str, int, float, float]]) -> list[list[Any]]:
    from mlflow.entities import Metric

    rows = [Metric(k, v, int(t * 1000), s) for k, s, v, t in points]
    return [rows[i : i + MLFLOW_BATCH] for i in range(0, len(rows), MLFLOW_BATCH)]


def ours_chunk(client: Any, run_id: int, batch: list[dict[str, Any]]) -> float:
    t0 = time.perf_counter()
    r = client.post(f"/runs/{run_id}/metrics", json={"points": batch})
    secs = time.perf_counter() - t0
    if r.status_code != 200:
        raise RuntimeError(f"ours: HTTP {r.status_code}: {r.text[:500]}")
    return secs


def ours_compact_chunk(client: Any, run_id: int, body: bytes) -> float:
    t0 = time.perf_counter()
    headers = {"Content-Type": "application/x-reasonlab-points"}
    r = client.post(f"/runs/{run_id}/metrics", content=body, headers=headers)
    secs = time.perf_counter() - t0
    if r.status_code != 200:
        raise RuntimeError(f"ours (compact): HTTP {r.status_code}: {r.text[:500]}")
    return secs


def mlflow_chunk(client: Any, run_id: str, batches: list[list[Any]]) -> float:
    t0 = time.perf_counter()
    for batch in batches:
        client.log_batch(run_id, metrics=batch, synchronous=True)
    return time.perf_counter() - t0


def count(db: str, sql: str, arg: Any) -> int:
    with psycopg.connect(pg_url(db, "postgresql")) as conn:
        row = conn.execute(sql, (arg,)).fetchone()
        return int(row[0]) if row else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, default=200_000)
    ap.add_argument("--keys", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2, help="timed rounds per side (fresh run each)")
    ap.add_argument(
        "--what-if-no-run-check",
        action="store_true",
        help="experiment, not our schema: drop the trigger that checks metric.run_id against runs "
        "(once per statement; migration 0003) before measuring, to see what the check costs",
    )
    args = ap.parse_args()

    points = make_points(args.points, args.keys)
    n = len(points)
    ours_batches = ours_payloads(points)
    ml_batches = mlflow_payloads(points)
    warm = make_points(OUR_BATCH, args.keys, seed=1)
    print(f"machine: {machine()}")
    print(
        f"{n:,} points = {args.keys} keys x {n // args.keys:,} steps; ours {len(ours_batches)} batches of "
        f"{OUR_BATCH:,}, MLflow {len(ml_batches)} log_batch calls of {MLFLOW_BATCH:,}; {args.rounds} round(s)"
    )

    from mlflow.tracking import MlflowClient

    with Resources("ingest") as res:
        try:
            api = start_api(res, reasonlab_env(res, res.database("ours")))
            if args.what_if_no_run_check:
                with psycopg.connect(
                    pg_url(api.db_url.rsplit("/", 1)[1], "postgresql"), autocommit=True
                ) as conn:
                    conn.execute("DROP TRIGGER metric_check_runs ON metric")
                    print("  WHAT-IF: dropped trigger metric_check_runs of metric (not our schema)")
            ml_db = res.database("mlflow")
            ml_url = start_mlflow(res, ml_db)
            ml = MlflowClient(tracking_uri=ml_url)
            exp_id = ml.create_experiment("bench-ingest")
            per = OUR_BATCH // MLFLOW_BATCH  # MLflow calls per chunk of our batch size
            with api.client() as client:
                # warm-up (connections, code paths), untimed, into separate runs
                wid = submit_diagnostic(client, name="warm-up")["id"]
                for i, batch in enumerate(ours_payloads(warm)):
                    ours_chunk(client, wid, batch)
                    mlflow_chunk(ml, ml.create_run(exp_id).info.run_id, mlflow_payloads(warm)[i : i + 2])
                ours_t: list[float] = []  # per round: total seconds
                ml_t: list[float] = []
                chunk_ratio: list[float] = []  # per chunk: mlflow seconds / ours seconds
                for rnd in range(args.rounds):
                    rid = submit_diagnostic(client, name=f"ingest-{rnd}")["id"]
                    mid = ml.create_run(exp_id).info.run_id
                    t_ours = t_ml = 0.0
                    for i, batch in enumerate(ours_batches):
                        ml_part = ml_batches[i * per : (i + 1) * per]
                        if (rnd + i) % 2 == 0:
                            a = ours_chunk(client, rid, batch)
                            b = mlflow_chunk(ml, mid, ml_part)
                        else:
                            b = mlflow_chunk(ml, mid, ml_part)
                            a = ours_chunk(client, rid, batch)
                        t_ours += a
                        t_ml += b
                        chunk_ratio.append(b / a)
                    n_ours = count(
                        api.db_url.rsplit("/", 1)[1], "SELECT count(*) FROM metric WHERE run_id = %s", rid
                    )
                    n_ml = count(ml_db, "SELECT count(*) FROM metrics WHERE run_uuid = %s", mid)
                    if (n_ours, n_ml) != (n, n):
                        raise RuntimeError(f"rows stored: ours {n_ours}, mlflow {n_ml}; expected {n}")
                    ours_t.append(t_ours)
                    ml_t.append(t_ml)
                    print(
                        f"  round {rnd + 1}: ours {t_ours:7.2f} s {n / t_ours:>9,.0f} points/s | mlflow {t_ml:7.2f} s "
                        f"{n / t_ml:>7,.0f} points/s | {t_ml / t_ours:4.1f}x  ({n:,} rows verified on each side)",
                        flush=True,
                    )
        except BaseException:
            res.keep_logs = True
            for label in ("api", "mlflow"):
                print(f"--- {label} log tail ---\n{res.log_tail(label)}", file=sys.stderr)
            raise

    ours_rate = [n / t for t in ours_t]
    ml_rate = [n / t for t in ml_t]
    rows = [
        [
            "mlflow log_batch (baseline)",
            f"{MLFLOW_BATCH:,}",
            f"{median(ml_t):.2f}",
            f"{median(ml_rate):,.0f}",
            f"{min(ml_rate):,.0f}-{max(ml_rate):,.0f}",
            "1.0x",
        ],
        [
            "ours POST /runs/{id}/metrics",
            f"{OUR_BATCH:,}",
            f"{median(ours_t):.2f}",
            f"{median(ours_rate):,.0f}",
            f"{min(ours_rate):,.0f}-{max(ours_rate):,.0f}",
            f"{median(ours_rate) / median(ml_rate):.1f}x",
        ],
    ]
    print()
    print(table(["variant", "batch", "median s", "median points/s", "range points/s", "vs mlflow"], rows))
    ratio = median(ours_rate) / median(ml_rate)
    print(
        f"per {OUR_BATCH:,}-point chunk, mlflow time / ours time: median {median(chunk_ratio):.1f}x, "
        f"p10 {quantile(chunk_ratio, 0.1):.1f}x, p90 {quantile(chunk_ratio, 0.9):.1f}x (n={len(chunk_ratio)})"
    )
    print(f"\ngoal ours >= 10x mlflow: {'met' if ratio >= 10 else 'MISSED'} ({ratio:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
