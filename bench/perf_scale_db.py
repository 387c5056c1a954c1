"""The seeded project of the browser's scale measurement (``make perf-scale``, frontend/perf/scale.mjs).

    .venv/bin/python bench/perf_scale_db.py seed [--database NAME] [--scale S]   # prints JSON
    .venv/bin/python bench/perf_scale_db.py drop [--database NAME]
    .venv/bin/python bench/perf_scale_db.py summary [--database NAME] [--forget]  # prints JSON

``summary`` waits (up to 600 s) until the project ``scale`` has a valid seed-group summary
(backend/groups/summary.py: the API builds it in the background after a slow whole-project grouped request)
and prints its state; ``--forget`` deletes any stored summary instead (the bench's "without" run).

``seed`` makes the Postgres database NAME (default ``reasonlab_perf_scale``) with bench/query_scale.py's
own seeding code (its ``_USERS`` bootstrap and ``seed``: 100,000 experiments and 1,000,000 runs in the
project ``scale`` at ``--scale 1``, members alice, bob and carol), unless it exists already with that
project seeded: then it is migrated to head and reused as it is (seeding takes ~5 minutes). It prints
one JSON line: the database URL, the project, a member's username and password, and the runs counted.
``drop`` drops the database (WITH FORCE).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

from _common import PYTHON, ROOT, Resources, drop_database, pg_url, reasonlab_env
from query_scale import _USERS, EXPERIMENTS, seed

DEFAULT_DATABASE = "reasonlab_perf_scale"
MEMBER = "alice"
MEMBER_PASSWORD = "Qx7-bench-pw-0-zebra"  # query_scale._USERS: alice is the first of its three members


def _exists(db: str) -> bool:
    with psycopg.connect(pg_url("postgres", "postgresql"), autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (db,)).fetchone() is not None


def _seeded_runs(db: str) -> int:
    """Runs of the project ``scale`` (0 when the database has no such project or no tables yet)."""
    with psycopg.connect(pg_url(db, "postgresql"), autocommit=True) as conn:
        if conn.execute("SELECT to_regclass('projects')").fetchone() == (None,):
            return 0
        row = conn.execute(
            "SELECT count(*) FROM runs r JOIN projects p ON p.id = r.project_id WHERE p.name = 'scale'"
        ).fetchone()
        return int(row[0]) if row else 0


def seed_database(db: str, scale: float) -> dict[str, object]:
    reuse = _exists(db) and _seeded_runs(db) > 0
    if not reuse:
        with psycopg.connect(pg_url("postgres", "postgresql"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{db}"')
    with Resources("perf_scale") as res:
        env = reasonlab_env(res, db)
        out = subprocess.run(
            [PYTHON, "-c", _USERS, "reuse" if reuse else "fresh"],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            raise RuntimeError(f"migrate/users failed:\n{out.stderr[-3000:]}")
        made = json.loads(out.stdout.strip().splitlines()[-1])
    if reuse:
        print(f"database {db}: reused (seeded earlier)", file=sys.stderr, flush=True)
    else:
        n_exp = max(10, round(EXPERIMENTS * scale))
        print(f"database {db}: seeding {n_exp:,} experiments, {n_exp * 10:,} runs", file=sys.stderr)
        t = time.perf_counter()
        sys.stdout, saved = sys.stderr, sys.stdout  # seed's progress lines go to stderr: stdout is the JSON
        try:
            seed(db, made["project"], made["users"], n_exp)
        finally:
            sys.stdout = saved
        print(f"seeded in {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    return {
        "database": db,
        "database_url": pg_url(db),
        "project": "scale",
        "username": MEMBER,
        "password": MEMBER_PASSWORD,
        "runs": _seeded_runs(db),
        "reused": reuse,
    }


def summary_state(db: str, forget: bool, timeout: float = 600.0) -> dict[str, object]:
    """Wait for the project ``scale``'s valid summary (or delete it: ``forget``)."""
    started = time.perf_counter()
    with psycopg.connect(pg_url(db, "postgresql"), autocommit=True) as conn:
        pid = conn.execute("SELECT id FROM projects WHERE name = 'scale'").fetchone()
        assert pid is not None, "no project scale"
        if forget:
            for table in ("group_summary_metrics", "group_summary_groups", "group_summaries"):
                conn.execute(f"DELETE FROM {table} WHERE project_id = %s", pid)
            return {"forgotten": True}
        while True:
            row = conn.execute(
                "SELECT generation, built_generation, until, built_at, covered_runs FROM group_summaries"
                " WHERE project_id = %s",
                pid,
            ).fetchone()
            if row is not None and row[1] is not None and row[0] == row[1]:
                return {
                    "valid": True,
                    "waited_s": round(time.perf_counter() - started, 1),
                    "until": row[2].isoformat(),
                    "built_at": row[3].isoformat(),
                    "covered_runs": row[4],
                }
            if time.perf_counter() - started > timeout:
                return {"valid": False, "waited_s": round(time.perf_counter() - started, 1)}
            time.sleep(0.5)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["seed", "drop", "summary"])
    ap.add_argument("--forget", action="store_true", help="summary: delete the stored summary instead")
    ap.add_argument("--database", default=DEFAULT_DATABASE)
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of 1,000,000 runs (a fresh seed)")
    args = ap.parse_args()
    if args.action == "drop":
        drop_database(args.database)
        print(f"database {args.database}: dropped", file=sys.stderr)
        return 0
    if args.action == "summary":
        print(json.dumps(summary_state(args.database, args.forget)), flush=True)
        return 0
    print(json.dumps(seed_database(args.database, args.scale)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
