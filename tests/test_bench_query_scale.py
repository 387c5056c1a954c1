"""bench/query_scale.py at a tiny scale, so that it cannot rot: it seeds its own Postgres database, starts
the API, answers every typical request with rows (the bench fails on anything else), writes its figures
and drops its database."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.postgres


def test_query_scale_smoke(postgres_admin_url: str, tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    proc = subprocess.run(
        [
            sys.executable,
            "bench/query_scale.py",
            "--scale",
            "0.001",
            "--repeats",
            "2",
            "--json",
            str(out),
            # every request counts as slow and the tables as large: the API builds its params indexes
            "--auto-index-after-ms",
            "0",
            "--auto-index-min-rows",
            "0",
            "--index-wait",
            "120",
            # and the whole project's grouped request builds the project's summary
            "--group-summary-after-ms",
            "0",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    figures = json.loads(out.read_text())
    assert figures["experiments"] == 100
    labels = [r["request"] for r in figures["results"]]
    assert len(labels) >= 10  # eight runs / experiments requests and the grouped ones
    assert any("group_by" in r["params"] for r in figures["results"])
    for r in figures["results"]:
        assert r["rows"] > 0, r
        assert 0 < r["p50_ms"] <= r["p99_ms"], r
    built = {r["request"]: r for r in figures["results"] if "first_ms" in r}
    assert set(built) == {
        "acc threshold, by params.lr",
        "grouped carma lambda 0.2 (5% of runs)",
        "grouped whole project, acc + loss",
    }
    assert built["grouped whole project, acc + loss"]["summary"] is True
    assert built["acc threshold, by params.lr"]["index"].startswith("ix_runs_sort_lr_")
    assert built["grouped carma lambda 0.2 (5% of runs)"]["index"].startswith("ix_runs_filter_lambda_")
    assert "the row above is measured after that" in proc.stdout
    assert "the row above is measured from it" in proc.stdout
    assert "| request" in proc.stdout and "p50 / goal" in proc.stdout
    names = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("database ")]
    assert len(names) == 1 and names[0].startswith("rl_bench_query_scale_"), proc.stdout[-2000:]
    with psycopg.connect(postgres_admin_url.replace("+psycopg", ""), autocommit=True) as conn:
        left = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (names[0],)).fetchall()
    assert left == []  # dropped (no --keep)
