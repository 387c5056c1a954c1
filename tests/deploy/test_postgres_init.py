"""The Postgres init script creates the MLflow database (run for real with psql against the machine's
Postgres), and is idempotent."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.conftest import REPO, service_env

INIT_SQL = REPO / "docker" / "postgres" / "initdb" / "10-create-mlflow-db.sql"


def test_postgres_runs_the_mlflow_init_script(config: dict[str, Any]) -> None:
    mounts = {v["target"]: v for v in config["services"]["postgres"]["volumes"]}
    init = mounts["/docker-entrypoint-initdb.d"]
    assert init["type"] == "bind" and Path(init["source"]) == INIT_SQL.parent
    assert INIT_SQL.is_file()
    assert service_env(config, "postgres")["POSTGRES_DB"] == "reasonlab"


@pytest.mark.services
def test_init_script_creates_the_mlflow_database(postgres_admin_url: str) -> None:
    """Run the init script the way the postgres image does (psql -f, ON_ERROR_STOP), twice."""
    from sqlalchemy import create_engine, text

    psql = shutil.which("psql")
    if psql is None:
        pytest.fail("psql (the PostgreSQL client) is needed to run the init script", pytrace=False)
    name = f"rl_test_mlflow_{os.getpid()}_{int(time.time())}"
    url = postgres_admin_url.replace("postgresql+psycopg://", "postgresql://")
    admin = create_engine(postgres_admin_url, isolation_level="AUTOCOMMIT")
    try:
        for _ in range(2):  # idempotent: a second run is not an error
            out = subprocess.run(
                [
                    psql,
                    "-v",
                    "ON_ERROR_STOP=1",
                    "--no-psqlrc",
                    "-v",
                    f"mlflow_db={name}",
                    "-d",
                    url,
                    "-f",
                    str(INIT_SQL),
                ],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert out.returncode == 0, out.stderr
            with admin.connect() as conn:
                assert (
                    conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}).scalar()
                    == 1
                )
        # without -v the database is `mlflow`, the one MLFLOW_BACKEND_STORE_URI names
        assert re.search(r"\\set mlflow_db mlflow\b", INIT_SQL.read_text())
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        admin.dispose()
