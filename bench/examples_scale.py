"""Per-example tables at scale: a run with 1,000,000 rows, paged and diffed through the API.

    .venv/bin/python bench/examples_scale.py                  # 1,000,000 rows a run
    .venv/bin/python bench/examples_scale.py --rows 100000 --repeats 5

Setup (started and removed by this script): our API (uvicorn, 1 process) on a fresh Postgres database.
Run A's rows (a Skill-Mix-like grading: skills, topic, a reply of ~300 characters, points per criterion):
the first --post rows through ``POST /runs/{id}/examples`` in batches of 1,000 (the ingest rate is
printed), the rest generated in SQL with the same shape (its count row set as the API keeps it); run B's are
copied from A in SQL with every 1,000th row's reply changed and one row more, then ``VACUUM ANALYZE``.
Timed (httpx from this process, keep-alive, one warm-up first; p50 and p99 of --repeats):
  tables       GET /runs/{A}/example-tables
  first page   GET /runs/{A}/examples?table=gradings&limit=100
  middle page  the same from idx N/2 (a cursor as next_cursor would hold it)
  last page    the same from idx N-100
  diff first   GET /runs/{A}/examples/diff?other={B}&table=gradings&limit=50 (one page: 10,000 rows compared)
  diff middle  the same from the middle key
Goal: every read < 150 ms at 1,000,000 rows (a page never counts or scans the table).
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Resources, machine, pg_url, quantile, reasonlab_env, start_api, table

BATCH = 1000


def row(i: int) -> dict[str, Any]:
    return {
        "idx": i,
        "key": f"combination-{i // 4:07d}/generation-{i % 4}",
        "data": {
            "combination": i // 4,
            "generation": i % 4,
            "skills": ["metaphor", "red herring"],
            "topic": "gardening",
            "reply": f"reply {i}: " + "lorem ipsum dolor sit amet " * 10,
            "gradings": [{"points": {"Illustrates metaphor": 1, "Makes sense": i % 2}}],
        },
    }


def cursor(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).decode().rstrip("=")


def timed(client: httpx.Client, path: str, params: dict[str, Any], repeats: int) -> tuple[list[float], Any]:
    client.get(path, params=params).raise_for_status()  # warm-up
    times, body = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        r = client.get(path, params=params)
        times.append((time.perf_counter() - t) * 1000)
        r.raise_for_status()
        body = r.json()
    return times, body


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--post", type=int, default=100_000, help="rows of run A posted through the API")
    args = ap.parse_args()
    n = args.rows
    print(f"machine: {machine()}")
    with Resources("examples") as res:
        db = res.database("examples")
        api = start_api(res, reasonlab_env(res, db))
        with api.client() as client:
            r = client.post(
                "/experiments",
                json={"name": "bench", "kind": "diagnostic", "spec": {}, "sweep": {"grid": {"seed": [1, 2]}}},
            )
            r.raise_for_status()
            a, b = (run["id"] for run in r.json()["runs"])
            posted = min(args.post, n)
            t = time.perf_counter()
            for start in range(0, posted, BATCH):
                body = {
                    "table": "gradings",
                    "rows": [row(i) for i in range(start, min(start + BATCH, posted))],
                }
                client.post(f"/runs/{a}/examples", json=body).raise_for_status()
            load = time.perf_counter() - t
            rate = posted / load
            print(
                f"  posted {posted:,} rows to run {a} in {load:.1f} s ({rate:,.0f} rows/s, batches of {BATCH})"
            )
            with psycopg.connect(pg_url(db, "postgresql"), autocommit=True) as conn:
                if n > posted:  # the rest in SQL: the same text the API stores for row(i)
                    t = time.perf_counter()
                    copy_sql = "COPY run_examples (run_id, table_name, idx, key, data, created_at) FROM STDIN"
                    with conn.cursor() as cur, cur.copy(copy_sql) as copy:
                        for i in range(posted, n):
                            r = row(i)
                            copy.write_row(
                                (a, "gradings", i, r["key"], json.dumps(r["data"]), "2026-11-26T00:00:00Z")
                            )
                    conn.execute(
                        "UPDATE run_example_tables SET rows = %s WHERE run_id = %s AND table_name = 'gradings'",
                        (n, a),
                    )
                    print(f"  copied {n - posted:,} more rows in SQL in {time.perf_counter() - t:.1f} s")
                conn.execute(
                    """INSERT INTO run_examples (run_id, table_name, idx, key, data, created_at)
                       SELECT %s, table_name, idx, key,
                              CASE WHEN idx %% 1000 = 7
                                   THEN jsonb_set(data::jsonb, '{reply}', '"changed"')::json ELSE data END,
                              created_at
                       FROM run_examples WHERE run_id = %s""",
                    (b, a),
                )
                conn.execute(
                    """INSERT INTO run_examples (run_id, table_name, idx, key, data, created_at)
                       VALUES (%s, 'gradings', %s, 'only-in-b', '{}', now())""",
                    (b, n),
                )
                conn.execute(
                    "INSERT INTO run_example_tables (run_id, table_name, rows, updated_at) VALUES (%s, 'gradings', %s, now())",
                    (b, n + 1),
                )
                conn.execute("VACUUM ANALYZE run_examples")
                conn.execute("VACUUM ANALYZE run_example_tables")
            middle_key = row(n // 2)["key"]
            cases = [
                ("tables", f"/runs/{a}/example-tables", {}),
                ("first page", f"/runs/{a}/examples", {"table": "gradings", "limit": 100}),
                (
                    "middle page",
                    f"/runs/{a}/examples",
                    {"table": "gradings", "limit": 100, "cursor": cursor({"idx": n // 2})},
                ),
                (
                    "last page",
                    f"/runs/{a}/examples",
                    {"table": "gradings", "limit": 100, "cursor": cursor({"idx": n - 101})},
                ),
                ("diff first", f"/runs/{a}/examples/diff", {"other": b, "table": "gradings", "limit": 50}),
                (
                    "diff middle",
                    f"/runs/{a}/examples/diff",
                    {
                        "other": b,
                        "table": "gradings",
                        "limit": 50,
                        "cursor": cursor({"phase": 1, "key": middle_key}),
                    },
                ),
            ]
            out = []
            for label, path, params in cases:
                times, body = timed(client, path, params, args.repeats)
                if label == "tables":
                    what = f"{body[0]['rows']:,} rows counted"
                elif "diff" in label:
                    what = f"{len(body['items'])} items, {body['scanned']:,} compared"
                else:
                    what = f"{len(body['items'])} rows from idx {body['items'][0]['idx']:,}"
                out.append([label, f"{quantile(times, 0.5):.1f}", f"{quantile(times, 0.99):.1f}", what])
            print(f"{n:,} rows a run, {args.repeats} requests each")
            print(table(["read", "p50 ms", "p99 ms", "answer"], out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
