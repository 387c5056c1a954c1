"""Logging from a training script: our SDK against MLflow's client, side by side in one run.

    .venv/bin/python bench/sdk_logging.py                     # 5,000 calls of 10 scalars per side
    .venv/bin/python bench/sdk_logging.py --calls 2000 --ingest-points 50000

What runs (all started and removed by this script, on fresh databases of the machine's Postgres):
  ours          uvicorn backend.main:create_app (1 process); the script logs with ``reasonlab_sdk.init`` /
                ``run.log`` (a background thread batches points to ``POST /runs/{id}/metrics`` with the
                run's token and keeps them in the run's local log until acknowledged).
  mlflow        ``mlflow server --workers 1`` on the same Postgres; the script logs with ``mlflow.log_metrics
                (..., synchronous=False)`` (MLflow's async logging, its fastest mode) into a run of its own.
  mlflow->ours  the same ``mlflow`` client with its tracking URI on our API's MLflow-compatible routes
                (docs/tracking.md, "MLflow's client"), same calls.

(a) Training-thread cost: the time one ``log`` call of 10 scalars takes on the caller's thread, every call
    timed (perf_counter_ns), median and p99 over ``--calls`` calls; goal ours <= 20 us.
(b) End to end: ``--calls`` calls of 10 scalars, from the first call until the server acknowledged every
    point (ours: ``run.finish()``, which waits for the acknowledgement; MLflow: ``mlflow.flush_async_logging``
    then ``end_run``); points per second, then the rows in each database are counted (all must be there).
    Goals: ours >= 10x MLflow async; MLflow's client against ours faster than against MLflow's server.
(c) The ingest route itself (bench/metric_ingest.py's measurement): ``--ingest-points`` points in batches
    of 10,000 through ``POST /runs/{id}/metrics``, as JSON (what the platform's workers send) and as the
    compact body (``application/x-reasonlab-points``, what the SDK's sender sends; each into a run of its
    own), against MLflow's ``log_batch`` (batches of 1,000) and against a binary ``COPY`` of the same rows
    on one connection into a table shaped like ``metric`` (written row by row with psycopg's
    ``write_row``, as a client would). Goals: ours >= 25x MLflow and >= 50% of the COPY.
The sides of (a) and (b) alternate per round (``--rounds``) so that load from elsewhere hits both alike.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

from bench._common import (
    Api,
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
from bench.metric_ingest import (
    MLFLOW_BATCH,
    OUR_BATCH,
    make_points,
    mlflow_chunk,
    mlflow_payloads,
    ours_chunk,
    ours_compact_chunk,
    ours_compact_payloads,
    ours_payloads,
)

KEYS = [f"m{i}" for i in range(10)]


def _values(i: int) -> dict[str, float]:
    return {k: (i * 7 + j) % 101 / 100.0 for j, k in enumerate(KEYS)}


def compat_uri(api: Api) -> str:
    """The tracking URI that points MLflow's client at our API's MLflow-compatible routes."""
    return f"{api.url}/api/v1/mlflow/default"


# -- one side: a script logging ``calls`` steps of 10 scalars ------------------------------------------


def ours_session(api: Api, calls: int, run_dir: Path) -> tuple[list[int], float, int]:
    """(per-call ns, seconds until acknowledged, run id) of one SDK run."""
    import reasonlab_sdk as rl

    os.environ["REASONLAB_DIR"] = str(run_dir)
    client = rl.ReasonLabClient(api.url, api.token)
    rows = [_values(i) for i in range(calls)]
    per_call: list[int] = []
    t0 = time.perf_counter()
    run = rl.init(project="default", experiment="bench-sdk", client=client)
    clock = time.perf_counter_ns
    for i, values in enumerate(rows):
        a = clock()
        run.log(values, step=i)
        per_call.append(clock() - a)
    left = run.finish(timeout=600)
    secs = time.perf_counter() - t0
    if left:
        raise RuntimeError(f"ours: {left} records not acknowledged")
    assert run.id is not None
    return per_call, secs, run.id


def mlflow_session(
    uri: str, calls: int, experiment: str, env: dict[str, str]
) -> tuple[list[int], float, str]:
    """(per-call ns, seconds until flushed and ended, MLflow run id) of one MLflow-client run, async mode."""
    import mlflow

    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        mlflow.set_tracking_uri(uri)
        mlflow.set_experiment(experiment)
        rows = [_values(i) for i in range(calls)]
        per_call: list[int] = []
        t0 = time.perf_counter()
        active = mlflow.start_run()
        clock = time.perf_counter_ns
        for i, values in enumerate(rows):
            a = clock()
            mlflow.log_metrics(values, step=i, synchronous=False)
            per_call.append(clock() - a)
        mlflow.flush_async_logging()
        mlflow.end_run()
        secs = time.perf_counter() - t0
        return per_call, secs, active.info.run_id
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def count(db: str, sql: str, arg: Any) -> int:
    with psycopg.connect(pg_url(db, "postgresql")) as conn:
        row = conn.execute(sql, (arg,)).fetchone()
        return int(row[0]) if row else 0


# -- (c): a binary COPY of the same rows, the floor -----------------------------------------------------

COPY_TABLE = """
CREATE TABLE IF NOT EXISTS bench_copy (
    run_id bigint NOT NULL, key text NOT NULL, step bigint NOT NULL,
    value double precision, time timestamptz NOT NULL, PRIMARY KEY (run_id, key, step))
"""


def copy_chunk(
    conn: psycopg.Connection[Any], run_id: int, batch: list[tuple[str, int, float, float]]
) -> float:
    """One batch as one binary COPY in its own transaction (the same rows ours stores)."""
    t0 = time.perf_counter()
    sql = "COPY bench_copy (run_id, key, step, value, time) FROM STDIN WITH (FORMAT BINARY)"
    with conn.transaction(), conn.cursor() as cur, cur.copy(sql) as cp:
        cp.set_types(["int8", "text", "int8", "float8", "timestamptz"])
        for k, s, v, t in batch:
            cp.write_row((run_id, k, s, v, dt.datetime.fromtimestamp(t, tz=dt.UTC)))
    return time.perf_counter() - t0


def ingest(
    api: Api, ml_uri: str, ml_db: str, n_points: int, rounds: int
) -> tuple[list[list[str]], dict[str, float]]:
    from mlflow.tracking import MlflowClient

    points = make_points(n_points, len(KEYS), seed=3)
    n = len(points)
    ours_batches = ours_payloads(points)
    compact_batches = ours_compact_payloads(points)
    ml_batches = mlflow_payloads(points)
    copy_batches = [points[i : i + OUR_BATCH] for i in range(0, n, OUR_BATCH)]
    per = OUR_BATCH // MLFLOW_BATCH
    ml = MlflowClient(tracking_uri=ml_uri)
    exp_id = ml.create_experiment("bench-sdk-ingest")
    db = api.db_url.rsplit("/", 1)[1]
    totals: dict[str, list[float]] = {"ours": [], "compact": [], "mlflow": [], "copy": []}
    with api.client() as client, psycopg.connect(pg_url(db, "postgresql"), autocommit=True) as conn:
        conn.execute(COPY_TABLE)
        for rnd in range(rounds + 1):  # round 0 warms up, untimed
            rid = submit_diagnostic(client, name=f"ingest-{rnd}")["id"]
            cid = submit_diagnostic(client, name=f"ingest-compact-{rnd}")["id"]
            mid = ml.create_run(exp_id).info.run_id
            t = {"ours": 0.0, "compact": 0.0, "mlflow": 0.0, "copy": 0.0}
            for i, batch in enumerate(ours_batches):
                steps: list[tuple[str, Callable[[], float]]] = [
                    ("ours", lambda b=batch, r=rid: ours_chunk(client, r, b)),
                    ("compact", lambda i=i, r=cid: ours_compact_chunk(client, r, compact_batches[i])),
                    ("mlflow", lambda i=i, m=mid: mlflow_chunk(ml, m, ml_batches[i * per : (i + 1) * per])),
                    ("copy", lambda i=i, r=rid: copy_chunk(conn, r, copy_batches[i])),
                ]
                shift = (rnd + i) % len(steps)
                for side, fn in steps[shift:] + steps[:shift]:
                    t[side] += fn()
            if rnd == 0:
                continue
            stored = (
                count(db, "SELECT count(*) FROM metric WHERE run_id = %s", rid),
                count(db, "SELECT count(*) FROM metric WHERE run_id = %s", cid),
                count(ml_db, "SELECT count(*) FROM metrics WHERE run_uuid = %s", mid),
                count(db, "SELECT count(*) FROM bench_copy WHERE run_id = %s", rid),
            )
            if stored != (n, n, n, n):
                raise RuntimeError(f"rows stored (ours, compact, mlflow, copy): {stored}; expected {n} each")
            for side in t:
                totals[side].append(t[side])
            print(
                f"  (c) round {rnd}: ours {n / t['ours']:,.0f} | compact {n / t['compact']:,.0f} | "
                f"mlflow {n / t['mlflow']:,.0f} | "
                f"copy {n / t['copy']:,.0f} points/s ({n:,} rows verified on each side)",
                flush=True,
            )
    rate = {side: n / median(ts) for side, ts in totals.items()}
    return rate_rows(rate), rate


def rate_rows(rate: dict[str, float]) -> list[list[str]]:
    return [
        ["mlflow log_batch (baseline)", f"{MLFLOW_BATCH:,}", f"{rate['mlflow']:,.0f}", "1.0x", ""],
        [
            "ours POST /runs/{id}/metrics, JSON",
            f"{OUR_BATCH:,}",
            f"{rate['ours']:,.0f}",
            f"{rate['ours'] / rate['mlflow']:.1f}x",
            f"{rate['ours'] / rate['copy']:.0%}",
        ],
        [
            "ours POST /runs/{id}/metrics, compact body (the SDK's)",
            f"{OUR_BATCH:,}",
            f"{rate['compact']:,.0f}",
            f"{rate['compact'] / rate['mlflow']:.1f}x",
            f"{rate['compact'] / rate['copy']:.0%}",
        ],
        ["binary COPY, one connection (floor)", f"{OUR_BATCH:,}", f"{rate['copy']:,.0f}", "", "100%"],
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=5_000, help="log calls of 10 scalars per side and round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--ingest-points", type=int, default=100_000)
    ap.add_argument("--skip-compat", action="store_true", help="leave out MLflow's client against ours")
    args = ap.parse_args()
    n = args.calls * len(KEYS)
    print(f"machine: {machine()}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"{args.calls:,} calls x {len(KEYS)} scalars = {n:,} points per side and round; {args.rounds} round(s)"
    )

    with Resources("sdk") as res:
        try:
            api = start_api(res, reasonlab_env(res, res.database("ours")))
            ml_db = res.database("mlflow")
            ml_uri = start_mlflow(res, ml_db)
            db = api.db_url.rsplit("/", 1)[1]
            ours_env = {"MLFLOW_TRACKING_TOKEN": api.token}
            sides: dict[str, Callable[[int], tuple[list[int], float]]] = {}

            def ours(rnd: int) -> tuple[list[int], float]:
                per_call, secs, rid = ours_session(api, args.calls, res.tmp / f"runs{rnd}")
                got = count(db, "SELECT count(*) FROM metric WHERE run_id = %s", rid)
                if got != n:
                    raise RuntimeError(f"ours: {got} rows stored, {n} logged")
                return per_call, secs

            def mlflow_own(rnd: int) -> tuple[list[int], float]:
                per_call, secs, mid = mlflow_session(ml_uri, args.calls, "bench-sdk", {})
                got = count(ml_db, "SELECT count(*) FROM metrics WHERE run_uuid = %s", mid)
                if got != n:
                    raise RuntimeError(f"mlflow: {got} rows stored, {n} logged")
                return per_call, secs

            def mlflow_ours(rnd: int) -> tuple[list[int], float]:
                per_call, secs, mid = mlflow_session(compat_uri(api), args.calls, "bench-compat", ours_env)
                got = count(db, "SELECT count(*) FROM metric WHERE run_id = %s", int(mid))
                if got != n:
                    raise RuntimeError(f"mlflow->ours: {got} rows stored, {n} logged")
                return per_call, secs

            sides = {"ours (reasonlab_sdk)": ours, "mlflow async -> mlflow server": mlflow_own}
            if not args.skip_compat:
                sides["mlflow async -> ours (compat routes)"] = mlflow_ours
            calls: dict[str, list[int]] = {s: [] for s in sides}
            seconds: dict[str, list[float]] = {s: [] for s in sides}
            names = list(sides)
            for rnd in range(args.rounds + 1):  # round 0 warms up (imports, connections), untimed
                order = names[rnd % len(names) :] + names[: rnd % len(names)]
                for side in order:
                    per_call, secs = sides[side](rnd)
                    if rnd:
                        calls[side] += per_call
                        seconds[side].append(secs)
                        print(f"  round {rnd}: {side}: {n / secs:,.0f} points/s end to end", flush=True)
            ingest_rows, ingest_rate = ingest(api, ml_uri, ml_db, args.ingest_points, args.rounds)
        except BaseException:
            res.keep_logs = True
            for label in ("api", "mlflow"):
                print(f"--- {label} log tail ---\n{res.log_tail(label)}", file=sys.stderr)
            raise

    base = "mlflow async -> mlflow server"
    rows = []
    for side in names:
        us = [c / 1000 for c in calls[side]]
        rate = n / median(seconds[side])
        rows.append(
            [
                side,
                f"{statistics.median(us):.1f}",
                f"{quantile(us, 0.99):.1f}",
                f"{rate:,.0f}",
                f"{rate / (n / median(seconds[base])):.1f}x",
            ]
        )
    print("\n(a) training-thread cost of one log call of 10 scalars, (b) end to end until acknowledged")
    print(table(["side", "median us/call", "p99 us/call", "points/s end to end", "vs mlflow async"], rows))
    print("\n(c) the ingest route (batches as each client sends them)")
    print(table(["variant", "batch", "points/s", "vs mlflow", "of COPY"], ingest_rows))
    ours_us = statistics.median(c / 1000 for c in calls["ours (reasonlab_sdk)"])
    e2e = n / median(seconds["ours (reasonlab_sdk)"]) / (n / median(seconds[base]))
    print(f"\ngoal (a) ours <= 20 us/call: {'met' if ours_us <= 20 else 'MISSED'} ({ours_us:.1f} us)")
    print(f"goal (b) ours >= 10x mlflow async end to end: {'met' if e2e >= 10 else 'MISSED'} ({e2e:.1f}x)")
    vs_ml, vs_copy = (
        ingest_rate["compact"] / ingest_rate["mlflow"],
        ingest_rate["compact"] / ingest_rate["copy"],
    )
    met = vs_ml >= 25 and vs_copy >= 0.5
    print(
        f"goal (c) ours (the SDK's compact body) >= 25x mlflow log_batch and >= 50% of the COPY: "
        f"{'met' if met else 'MISSED'} ({vs_ml:.1f}x, {vs_copy:.0%}; JSON body "
        f"{ingest_rate['ours'] / ingest_rate['mlflow']:.1f}x, {ingest_rate['ours'] / ingest_rate['copy']:.0%})"
    )
    if not args.skip_compat:
        compat = median(seconds[base]) / median(seconds["mlflow async -> ours (compat routes)"])
        print(
            f"goal (b) mlflow's client faster against ours than against mlflow: "
            f"{'met' if compat > 1 else 'MISSED'} ({compat:.2f}x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
