"""The query language at scale: one project with 100,000 experiments and 1,000,000 runs
on Postgres, filtered, sorted and grouped first pages through the API. Goal: < 150 ms each.

    .venv/bin/python bench/query_scale.py                    # 100,000 experiments, 1,000,000 runs
    .venv/bin/python bench/query_scale.py --scale 0.01       # 1,000 experiments, 10,000 runs (a minute)
    .venv/bin/python bench/query_scale.py --keep             # keep the seeded database (its name is printed)
    .venv/bin/python bench/query_scale.py --database NAME    # measure a kept database again (migrated to head)

Setup (made and removed by this script): a fresh Postgres database ``rl_bench_query_scale_<pid>``
migrated as the app migrates (``backend.bootstrap.migrate``: alembic), the admin, a project ``scale`` with
three members (alice, bob, carol) and an API token of alice's (a member: the requests go through the
member's project check, as a user's do). The rows are written in SQL (``INSERT ... SELECT
generate_series``, never the ORM; statuses from a hash of the ids, values from ``random()`` after
``setseed``), so two runs seed the same data:

- experiments: kinds smoe_sraven (2 in 5), carma, reasonformer, skillmix; specs as the kinds nest them
  (``lr``, ``model.n_experts``, ``model.d_model``, ``top_k``, ``lambda``, ``steps``); authors alice, bob,
  carol; created one every ~5 minutes back from now; 5% tagged ``paper``.
- runs: 10 an experiment (its spec with ``lr`` swept over two values and ``seed`` 0..4, as a
  ``grid x seeds`` sweep resolves them); statuses succeeded 85%, failed 7%, cancelled 2%, running 3%,
  queued 3% with the times they would have; 1 in 10 named; tags ``baseline`` (10%), ``paper`` (2%).
- metric_latest: every run but the queued ones has ``loss`` and ``acc`` (value, vmin, vmax as the ingest
  keeps them: the last value lies between the series' smallest and largest), 1 in 3 also ``val/acc``.
  (The point series, ``metric``, are not seeded: no list or group reads them.)

Then ``VACUUM ANALYZE``, uvicorn (one process, as ``reasonlab up`` runs it) on a free port, and per request one
warm-up then --repeats timed calls (httpx keep-alive from this process): p50, p99, and p50 / 150 ms.
A request that answers anything but 200, or no rows, fails the bench. The grouped request is measured
when ``GET /runs`` has ``group_by`` (its OpenAPI parameters say so); otherwise the bench says it is not.

Indexes built on first use (backend/query/autoindex.py, Postgres): the ``params.lr`` sort and the grouped
request filtering on ``params.lambda`` (``AUTO_INDEXED``) are each measured in two parts: their first
request (timed alone, no warm-up: the path has no index, the API answers by sorting or filtering every
matching run and queues the index), then a wait, polling ``auto_indexes`` every 0.5 s (``--index-wait``,
300 s at most), until the API has built and recorded the index; the warm-up and timed requests come after
it (the steady state: the table's row for the request says "after its auto index"). Any index an earlier
run's API built is dropped first (a reused ``--database``), so every run shows the first request. The
API's thresholds are its defaults (150 ms of SQL, a table of 20,000 rows) unless
``--auto-index-after-ms`` / ``--auto-index-min-rows`` say otherwise (the tests' tiny scale sets both to 0).

The whole project's seed groups (no filter: every run of the project) are answered from a stored summary
of its ended runs once the API has built it (backend/groups/summary.py), so that request is measured in two
parts too: any stored summary is deleted, its first request is timed alone (answered by SQL: the API
queues the summary's build), then ``group_summaries`` is polled until the summary is valid, then the
warm-up and timed requests ("from the stored summary"). ``--group-summary-after-ms`` sets the API's
``REASONLAB_GROUP_SUMMARY_AFTER_MS`` (the tests' tiny scale: 0).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

from _common import (
    PYTHON,
    ROOT,
    Resources,
    drop_database,
    free_port,
    machine,
    pg_url,
    quantile,
    reasonlab_env,
    table,
    wait_http,
)

GOAL_MS = 150.0
EXPERIMENTS = 100_000
RUNS_PER_EXPERIMENT = 10

_USERS = """
import json, sys
from backend.auth import repository, service
from backend.bootstrap import ensure_admin, migrate, session_for
from backend.projects import service as projects
from backend.settings import Settings
settings = Settings()
migrate(settings)  # alembic upgrade head, as the app does at start
with session_for(settings) as session:
    if sys.argv[1] == "fresh":
        session.close()
        ensure_admin(settings)
        project = projects.get_or_create_project(session, "scale", "bench/query_scale.py")
        for i, name in enumerate(("alice", "bob", "carol")):
            projects.create_member(session, name, "Qx7-bench-pw-" + str(i) + "-zebra", project="scale")
    project = projects.get_or_create_project(session, "scale", "bench/query_scale.py")
    names = ("alice", "bob", "carol")
    users = [repository.user_by_name(session, n) for n in names]
    _, token = service.create_token(session, users[0], "bench")
    session.commit()
    print(json.dumps({"project": project.id, "users": [u.id for u in users], "token": token}))
"""

SEED_EXPERIMENTS = """
INSERT INTO experiments (project_id, name, description, kind, spec, sweep, author_id, created_at)
SELECT %(project)s, 'exp ' || g, '', k.kind,
       (CASE k.kind
          WHEN 'smoe_sraven' THEN jsonb_build_object(
              'kind', 'smoe_sraven', 'lr', lr, 'top_k', 1 + (g / 5) %% 4, 'steps', 2000,
              'model', jsonb_build_object('n_experts', 2 + (g / 20) %% 4, 'd_model', 64))
          WHEN 'carma' THEN jsonb_build_object(
              'kind', 'carma', 'lr', lr, 'lambda', (ARRAY[0.0, 0.1, 0.2, 0.5])[1 + (g / 5) %% 4],
              'steps', 1000, 'model', jsonb_build_object('d_model', 128))
          WHEN 'reasonformer' THEN jsonb_build_object(
              'kind', 'reasonformer', 'lr', lr, 'top_k', 1 + (g / 5) %% 3, 'steps', 3000,
              'model', jsonb_build_object('n_experts', 4 + (g / 20) %% 3, 'd_model', 256))
          ELSE jsonb_build_object('kind', 'skillmix', 'k', 1 + g %% 5, 'model', jsonb_build_object('d_model', 64))
        END)::json,
       jsonb_build_object('grid', jsonb_build_object('lr', jsonb_build_array(lr, lr * 2)),
                          'seeds', jsonb_build_array(0, 1, 2, 3, 4))::json,
       (%(users)s::int[])[1 + g %% 3],
       now() - make_interval(secs => (%(n)s - g) * 300 + 60)
FROM generate_series(1, %(n)s) AS g,
     LATERAL (SELECT (ARRAY['smoe_sraven', 'carma', 'smoe_sraven', 'reasonformer', 'skillmix'])[1 + g %% 5]
              AS kind, (ARRAY[0.0001, 0.0003, 0.001, 0.003])[1 + (g / 7) %% 4] AS lr) AS k
"""

# each configuration of an experiment (its spec with one lr of the sweep, without seed), with the
# group key the app gives its runs (backend/groups/key.py, computed in Python below from this JSON)
SEED_CONFIGS = """
CREATE TEMP TABLE bench_configs AS
SELECT e.id AS experiment_id, h,
       (e.spec::jsonb || CASE WHEN e.spec::jsonb ? 'lr'
                              THEN jsonb_build_object('lr', (e.spec->>'lr')::float8 * (1 + h)) ELSE '{}' END)
       AS spec,
       NULL::varchar(64) AS group_key
FROM experiments e CROSS JOIN generate_series(0, 1) AS h
WHERE e.project_id = %(project)s
"""

SEED_RUNS = """
INSERT INTO runs (experiment_id, project_id, kind, index, spec, params, group_key, queue, status, attempt,
                  max_attempts, progress_done, progress_total, progress_message, cancel_requested, dispatched,
                  dispatched_at, name, created_at, started_at, finished_at, updated_at, table_rev,
                  progress_base_done, logged_params_rev, heartbeat_at, error)
SELECT e.id, e.project_id, e.kind, i,
       (c.spec || jsonb_build_object('seed', i %% 5))::json,
       (jsonb_build_object('seed', i %% 5)
        || CASE WHEN c.spec ? 'lr' THEN jsonb_build_object('lr', c.spec->'lr') ELSE '{}' END)::json,
       c.group_key, 'cpu', s.status, 1, 3,
       CASE WHEN s.status = 'queued' THEN 0 ELSE 100 END, 100, '', false, true, e.created_at,
       CASE WHEN (e.id + i) %% 10 = 0 THEN 'run ' || e.id || '-' || i END,
       e.created_at, st, CASE WHEN s.status IN ('succeeded', 'failed', 'cancelled') THEN st + interval '20 minutes' END,
       e.created_at, 0, 0, 0,
       CASE WHEN s.status = 'running' THEN now() END,
       CASE WHEN s.status = 'failed' THEN 'RuntimeError: diverged' END
FROM experiments e
CROSS JOIN generate_series(0, %(per)s - 1) AS i
JOIN bench_configs c ON c.experiment_id = e.id AND c.h = i / 5,
LATERAL (SELECT CASE WHEN r < 850 THEN 'succeeded' WHEN r < 920 THEN 'failed' WHEN r < 940 THEN 'cancelled'
                     WHEN r < 970 THEN 'running' ELSE 'queued' END AS status
         FROM (SELECT (e.id::bigint * 7919 + i * 104729) %% 1000 AS r) AS x) AS s,
LATERAL (SELECT CASE WHEN s.status <> 'queued' THEN e.created_at + interval '1 minute' END AS st) AS t
WHERE e.project_id = %(project)s
ORDER BY e.id, i
"""

SEED_METRICS = """
INSERT INTO metric_latest (run_id, key, step, value, rev, vmin, vmax)
SELECT id, key, 2000, v, 1, LEAST(v, lo), GREATEST(v, hi)
FROM (
    SELECT r.id, m.key,
           CASE WHEN m.key = 'loss' THEN 0.05 + random() * 2 ELSE 0.2 + random() * 0.75 END AS v,
           CASE WHEN m.key = 'loss' THEN 0.02 + random() * 0.5 ELSE 0.05 + random() * 0.2 END AS lo,
           CASE WHEN m.key = 'loss' THEN 2.5 + random() ELSE 0.3 + random() * 0.69 END AS hi
    FROM runs r
    CROSS JOIN (VALUES ('loss'), ('acc'), ('val/acc')) AS m(key)
    WHERE r.project_id = %(project)s AND r.status <> 'queued' AND (m.key <> 'val/acc' OR r.id %% 3 = 0)
) AS x
"""

SEED_TAGS = """
INSERT INTO run_tags (run_id, tag)
SELECT id, 'baseline' FROM runs WHERE project_id = %(project)s AND id %% 10 = 3
UNION ALL SELECT id, 'paper' FROM runs WHERE project_id = %(project)s AND id %% 50 = 7;
INSERT INTO experiment_tags (experiment_id, tag)
SELECT id, 'paper' FROM experiments WHERE project_id = %(project)s AND id %% 20 = 1
"""


def seed(db: str, project: int, users: list[int], n_exp: int) -> None:
    """The rows, in SQL (runs' group keys computed in Python, as the app computes them)."""
    from backend.groups.key import group_key

    args = {"project": project, "users": users, "n": n_exp, "per": RUNS_PER_EXPERIMENT}
    with psycopg.connect(pg_url(db, "postgresql"), autocommit=True) as conn:
        conn.execute("SELECT setseed(0.25)")

        def step(label: str, sql: str) -> None:
            t = time.perf_counter()
            rows = 0
            for part in sql.split(";"):
                if part.strip():
                    rows += max(conn.execute(part, args).rowcount, 0)  # type: ignore[arg-type]
            print(f"  seeded {label}: {rows:,} rows in {time.perf_counter() - t:.1f} s", flush=True)

        step("experiments", SEED_EXPERIMENTS)
        t = time.perf_counter()
        conn.execute(SEED_CONFIGS, args)  # type: ignore[arg-type]
        configs = conn.execute("SELECT experiment_id, h, spec::text FROM bench_configs").fetchall()
        with conn.cursor() as cur:
            cur.execute("CREATE TEMP TABLE bench_keys (experiment_id int, h int, group_key varchar(64))")
            with cur.copy("COPY bench_keys FROM STDIN") as copy:
                for eid, h, spec in configs:
                    copy.write_row((eid, h, group_key(json.loads(spec))))
        conn.execute(
            "UPDATE bench_configs c SET group_key = k.group_key FROM bench_keys k "
            "WHERE k.experiment_id = c.experiment_id AND k.h = c.h"
        )
        conn.execute("CREATE INDEX ON bench_configs (experiment_id, h)")
        conn.execute("ANALYZE bench_configs")
        print(
            f"  group keys of {len(configs):,} configurations in {time.perf_counter() - t:.1f} s", flush=True
        )
        step("runs", SEED_RUNS)
        step("metric_latest", SEED_METRICS)
        step("tags", SEED_TAGS)
        t = time.perf_counter()
        conn.execute("VACUUM ANALYZE")
        print(f"  VACUUM ANALYZE in {time.perf_counter() - t:.1f} s", flush=True)


def cases(grouped: bool) -> list[tuple[str, str, dict[str, Any]]]:
    """The typical requests: (label, path, query parameters)."""
    runs = "/runs"
    out: list[tuple[str, str, dict[str, Any]]] = [
        (
            "smoe grid cell, by max(acc)",
            runs,
            {
                "q": 'kind = "smoe_sraven" and params.top_k = 4 and params.model.n_experts >= 3',
                "sort": "max(metrics.acc)",
                "order": "desc",
            },
        ),
        (
            "failed/cancelled last 30 days, by created",
            runs,
            {"q": 'status in ("failed", "cancelled") and created > now - 30d', "sort": "created_at"},
        ),
        ("tag paper, by created", runs, {"q": 'tags contains "paper"', "sort": "created_at"}),
        (
            "status + loss threshold, by min(loss)",
            runs,
            {"q": 'status = "succeeded" and metrics.loss < 0.5', "sort": "min(metrics.loss)", "order": "asc"},
        ),
        (
            "acc threshold, by params.lr",
            runs,
            {"q": "max(metrics.acc) > 0.9", "sort": "params.lr", "order": "desc"},
        ),  # the API builds params.lr's index (desc) after this request's first one: AUTO_INDEXED
        (
            "experiments carma lambda, by created",
            "/experiments",
            {"q": 'kind = "carma" and params.lambda >= 0.2', "sort": "created"},
        ),
        ("experiments by name", "/experiments", {"q": 'tags = "paper"', "sort": "name", "order": "asc"}),
        ("runs by name", runs, {"q": "name exists", "sort": "name", "order": "asc"}),
    ]
    if grouped:
        out.append(
            (
                "grouped last day's carma, acc + loss",
                runs,
                {
                    "q": 'kind = "carma" and created > now - 1d',
                    "group_by": "default",
                    "metrics": "metrics.acc,max(metrics.acc),metrics.loss",
                },
            )
        )
        out.append(
            (
                "grouped carma lambda 0.2 (5% of runs)",
                runs,
                {
                    "q": 'kind = "carma" and params.lambda = 0.2',
                    "group_by": "default",
                    "metrics": "metrics.acc,max(metrics.acc),metrics.loss",
                },
            )
        )
        out.append(
            (
                "grouped whole project, acc + loss",
                runs,
                {"group_by": "default", "metrics": "metrics.acc,metrics.loss"},
            )
        )  # from the project's stored summary once the API has built it: SUMMARIZED
    return out


# the request answered from the project's stored seed-group summary (backend/groups/summary.py) once the API
# has built it in the background after its first (SQL) answer
SUMMARIZED = "grouped whole project, acc + loss"


def forget_summary(db: str, project: int) -> None:
    """Delete the project's stored summary (a reused --database): the first request answers by SQL."""
    with psycopg.connect(pg_url(db, "postgresql"), autocommit=True) as conn:
        for table in ("group_summary_metrics", "group_summary_groups", "group_summaries"):
            conn.execute(f"DELETE FROM {table} WHERE project_id = %s", (project,))


def first_and_summarize(
    client: httpx.Client, db: str, path: str, params: dict[str, Any], project: int, wait: float
) -> dict[str, Any]:
    """The whole project's first grouped request (timed: no summary, the SQL answers and the API queues
    the summary's build), then the wait until the project's summary is valid (polled every 0.5 s)."""
    forget_summary(db, project)
    t = time.perf_counter()
    r = client.get(path, params=params)
    first_ms = (time.perf_counter() - t) * 1000
    if r.status_code != 200:
        raise RuntimeError(f"GET {path} {params}: {r.status_code} {r.text[:500]}")
    t = time.perf_counter()
    valid = False
    while time.perf_counter() - t < wait and not valid:
        with psycopg.connect(pg_url(db, "postgresql"), autocommit=True) as conn:
            row = conn.execute(
                "SELECT generation, built_generation FROM group_summaries WHERE project_id = %s", (project,)
            ).fetchone()
        valid = row is not None and row[1] is not None and row[0] == row[1]
        if not valid:
            time.sleep(0.5)
    return {"first_ms": first_ms, "summary": valid, "built_after_s": time.perf_counter() - t}


# the requests whose params path the API indexes on first use (backend/query/autoindex.py): their label,
# then (table, path) as auto_indexes records them
AUTO_INDEXED = {
    "acc threshold, by params.lr": ("runs", "params.lr"),
    "grouped carma lambda 0.2 (5% of runs)": ("runs", "params.lambda"),
}


def auto_indexes(db: str) -> list[tuple[str, str, str, str]]:
    """The indexes the API built itself: (table, path, direction, index name)."""
    with psycopg.connect(pg_url(db, "postgresql")) as conn:
        rows = conn.execute("SELECT entity, path, direction, index_name FROM auto_indexes ORDER BY id")
        return [tuple(r) for r in rows.fetchall()]  # type: ignore[misc]


def drop_auto_indexes(db: str) -> int:
    """Remove what an earlier run's API built (a reused --database), so the first request is again the one
    without the index: the number dropped."""
    rows = auto_indexes(db)
    with psycopg.connect(pg_url(db, "postgresql"), autocommit=True) as conn:
        for _, _, _, name in rows:
            conn.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"')  # names: [a-z0-9_], the app's
        conn.execute("DELETE FROM auto_indexes")
    return len(rows)


def first_and_build(
    client: httpx.Client, db: str, path: str, params: dict[str, Any], entity: str, field: str, wait: float
) -> dict[str, Any]:
    """The first request of a case whose params path has no index yet (timed: the API answers it
    without the index and queues the build), then the wait until ``auto_indexes`` records the index
    (polled every 0.5 s, at most ``wait`` seconds)."""
    t = time.perf_counter()
    r = client.get(path, params=params)
    first_ms = (time.perf_counter() - t) * 1000
    if r.status_code != 200:
        raise RuntimeError(f"GET {path} {params}: {r.status_code} {r.text[:500]}")
    t = time.perf_counter()
    name = None
    while time.perf_counter() - t < wait and name is None:
        name = next((n for e, p, _, n in auto_indexes(db) if (e, p) == (entity, field)), None)
        if name is None:
            time.sleep(0.5)
    return {"first_ms": first_ms, "index": name, "built_after_s": time.perf_counter() - t}


def has_group_by(api_url: str) -> bool:
    """Whether ``GET /runs`` takes ``group_by`` (the OpenAPI document's parameters)."""
    spec = httpx.get(api_url + "/api/v1/openapi.json", timeout=60).json()
    params = spec["paths"]["/api/v1/runs"]["get"].get("parameters", [])
    return any(p.get("name") == "group_by" for p in params)


def rows_of(body: Any) -> int:
    if isinstance(body, dict):
        for key in ("groups", "items"):  # a grouped answer has groups and an empty items
            if isinstance(body.get(key), list):
                return len(body[key])
    return 0


def timed(client: httpx.Client, path: str, params: dict[str, Any], repeats: int) -> tuple[list[float], int]:
    """One warm-up, then ``repeats`` timed requests: (milliseconds, rows of the last answer)."""
    times: list[float] = []
    rows = 0
    for i in range(repeats + 1):
        t = time.perf_counter()
        r = client.get(path, params=params)
        ms = (time.perf_counter() - t) * 1000
        if r.status_code != 200:
            raise RuntimeError(f"GET {path} {params}: {r.status_code} {r.text[:500]}")
        rows = rows_of(r.json())
        if rows == 0:
            raise RuntimeError(f"GET {path} {params}: no rows")
        if i:
            times.append(ms)
    return times, rows


def serve(res: Resources, env: dict[str, str]) -> str:
    """uvicorn (one process, as ``reasonlab up`` runs the API) on a free port: its URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [PYTHON, "-m", "uvicorn", "backend.main:create_app", "--factory", "--host", "127.0.0.1"]
    argv += ["--port", str(port), "--log-level", "warning", "--no-access-log"]
    proc = res.process("api", argv, {**env, "REASONLAB_API_URL": url})
    wait_http(f"{url}/api/v1/health", proc, what="ReasonLab API")
    return url


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--scale", type=float, default=1.0, help="fraction of 100,000 experiments / 1,000,000 runs"
    )
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--limit", type=int, default=50, help="rows a page")
    ap.add_argument("--keep", action="store_true", help="keep the database (its name is printed)")
    ap.add_argument(
        "--database", help="measure a database an earlier --keep run seeded (migrated to head first; kept)"
    )
    ap.add_argument("--json", type=Path, help="also write the figures here (JSON)")
    ap.add_argument(
        "--index-wait",
        type=float,
        default=300.0,
        help="seconds to wait for the API's own index of a params path after its first request",
    )
    ap.add_argument(
        "--auto-index-after-ms",
        type=float,
        help="the API's REASONLAB_AUTO_INDEX_AFTER_MS (default: the app's, 150); 0 with "
        "--auto-index-min-rows 0 makes a small seeded project build its indexes too (tests)",
    )
    ap.add_argument(
        "--auto-index-min-rows", type=int, help="the API's REASONLAB_AUTO_INDEX_MIN_ROWS (20,000)"
    )
    ap.add_argument(
        "--group-summary-after-ms",
        type=float,
        help="the API's REASONLAB_GROUP_SUMMARY_AFTER_MS (default: the app's, 150); 0 makes a small "
        "project's whole-project grouped request build its summary too (tests)",
    )
    args = ap.parse_args()
    n_exp = max(10, round(EXPERIMENTS * args.scale))
    print(f"machine: {machine()}")
    print(f"load average before: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}", flush=True)
    with Resources("query") as res:
        if args.database:
            db = args.database
            print(f"database {db} (reused, not dropped)")
        else:
            db = f"rl_bench_query_scale_{os.getpid()}"
            with psycopg.connect(pg_url("postgres", "postgresql"), autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
                conn.execute(f'CREATE DATABASE "{db}"')
            print(f"database {db}" + (" (kept: --keep)" if args.keep else " (dropped at the end)"))
            if not args.keep:
                res.callback(drop_database, db)
        extra = {}
        if args.auto_index_after_ms is not None:
            extra["REASONLAB_AUTO_INDEX_AFTER_MS"] = str(args.auto_index_after_ms)
        if args.auto_index_min_rows is not None:
            extra["REASONLAB_AUTO_INDEX_MIN_ROWS"] = str(args.auto_index_min_rows)
        if args.group_summary_after_ms is not None:
            extra["REASONLAB_GROUP_SUMMARY_AFTER_MS"] = str(args.group_summary_after_ms)
        env = reasonlab_env(res, db, **extra)
        what = "reuse" if args.database else "fresh"
        out = subprocess.run([PYTHON, "-c", _USERS, what], env=env, cwd=ROOT, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"migrate/users failed:\n{out.stderr[-3000:]}")
        made = json.loads(out.stdout.strip().splitlines()[-1])
        if args.database:
            with psycopg.connect(pg_url(db, "postgresql")) as conn:
                row = conn.execute(
                    "SELECT count(*) FROM experiments WHERE project_id = %s", (made["project"],)
                )
                n_exp = int(row.fetchone()[0])  # type: ignore[index]
        else:
            print(f"seeding {n_exp:,} experiments, {n_exp * RUNS_PER_EXPERIMENT:,} runs", flush=True)
            seed(db, made["project"], made["users"], n_exp)
        dropped = drop_auto_indexes(db)
        if dropped:
            print(f"dropped {dropped} index(es) the API had built in an earlier run (auto_indexes)")
        api_url = serve(res, env)
        grouped = has_group_by(api_url)
        headers = {"Authorization": f"Bearer {made['token']}"}
        results: list[dict[str, Any]] = []
        with httpx.Client(base_url=api_url + "/api/v1", headers=headers, timeout=300) as client:
            for label, path, params in cases(grouped):
                params = {**params, "project": "scale", "limit": args.limit}
                built: dict[str, Any] = {}
                if label == SUMMARIZED:
                    built = first_and_summarize(client, db, path, params, made["project"], args.index_wait)
                    print(
                        f"  {label}: first request {built['first_ms']:.1f} ms (no summary: SQL); "
                        + (
                            f"the API built the project's summary {built['built_after_s']:.1f} s after it"
                            if built["summary"]
                            else f"no summary built within {built['built_after_s']:.0f} s"
                        ),
                        flush=True,
                    )
                elif label in AUTO_INDEXED:
                    entity, field = AUTO_INDEXED[label]
                    built = first_and_build(client, db, path, params, entity, field, args.index_wait)
                    print(
                        f"  {label}: first request {built['first_ms']:.1f} ms (no index); "
                        + (
                            f"the API built {built['index']} {built['built_after_s']:.1f} s after it"
                            if built["index"]
                            else f"no index built within {built['built_after_s']:.0f} s (a table under "
                            "auto_index_min_rows, or a request faster than auto_index_after_ms)"
                        ),
                        flush=True,
                    )
                times, rows = timed(client, path, params, args.repeats)
                p50, p99 = quantile(times, 0.5), quantile(times, 0.99)
                results.append(
                    {
                        "request": label,
                        "path": path,
                        "params": params,
                        "p50_ms": p50,
                        "p99_ms": p99,
                        "rows": rows,
                        **built,
                    }
                )
                print(f"  {label}: p50 {p50:.1f} ms, p99 {p99:.1f} ms ({rows} rows)", flush=True)
        print(f"load average after: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
        print(
            f"{n_exp:,} experiments, {n_exp * RUNS_PER_EXPERIMENT:,} runs; first page of {args.limit}, "
            f"{args.repeats} requests each after a warm-up; goal < {GOAL_MS:.0f} ms"
        )
        rows_out = [
            [
                r["request"]
                + (" (after its auto index)" if r.get("index") else "")
                + (" (from the stored summary)" if r.get("summary") else ""),
                f"`{r['params'].get('q', '')}`",
                f"{r['params'].get('sort', '')} {r['params'].get('order', 'desc')}".strip()
                + (f", group_by={r['params']['group_by']}" if "group_by" in r["params"] else ""),
                f"{r['p50_ms']:.1f}",
                f"{r['p99_ms']:.1f}",
                f"{r['p50_ms'] / GOAL_MS:.2f}",
            ]
            for r in results
        ]
        print(table(["request", "q", "sort", "p50 ms", "p99 ms", "p50 / goal"], rows_out))
        for r in results:
            if "summary" in r:
                print(
                    f"{r['request']}: its first request {r['first_ms']:.1f} ms, answered by SQL (no summary); "
                    + (
                        f"then the API built the project's summary ({r['built_after_s']:.1f} s), and the "
                        "row above is measured from it"
                        if r["summary"]
                        else "no summary was built: the row above is the SQL's"
                    )
                )
            elif "first_ms" in r:
                print(
                    f"{r['request']}: its first request {r['first_ms']:.1f} ms, answered without an index; "
                    + (
                        f"then the API built {r['index']} in the background ({r['built_after_s']:.1f} s), "
                        "and the row above is measured after that"
                        if r["index"]
                        else "no index was built: the row above is without one"
                    )
                )
        if not grouped:
            print("grouped request: not measured (GET /runs has no group_by parameter in this build)")
        if args.json:
            args.json.write_text(json.dumps({"experiments": n_exp, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
