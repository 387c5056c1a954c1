"""metric.run_id -> runs.id without a declared foreign key (migration 0003): triggers keep the
same guarantees, on SQLite and Postgres. Also: the summary table's semantics and the migration's data.

Postgres checks a foreign key once per inserted point; the trigger checks once per statement and run,
with the foreign key's lock (KEY SHARE on the run row), so a run deleted while points go in never
leaves orphans (the race tests below, Postgres only: SQLite serialises writers).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from alembic import command
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError, IntegrityError

from backend.bootstrap import alembic_config
from backend.db import get_engine, session_factory
from backend.metrics import points as metric_points
from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def engine(api: Api) -> Iterator[Engine]:
    yield get_engine(api.settings.database_url)


def _run(api: Api) -> dict[str, Any]:
    run: dict[str, Any] = api.submit({}).json()["runs"][0]
    return run


def _post(api: Api, run_id: int, points: list[tuple[str, int, float | None]]) -> None:
    body = {"points": [{"key": k, "step": s, "value": v} for k, s, v in points]}
    r = api.client.post(f"/api/v1/runs/{run_id}/metrics", json=body, headers=api.worker)
    assert r.status_code == 200, r.text


def _count(engine: Engine, table: str, run_id: int) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(text(f"SELECT count(*) FROM {table} WHERE run_id = :r"), {"r": run_id}).scalar_one()
        )


def _insert_point(engine: Engine, run_id: int, step: int = 0) -> None:
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO metric (run_id, key, step, value, time) VALUES (:r, 'x', :s, 1.0, :t)"),
            {"r": run_id, "s": step, "t": NOW},
        )


def test_a_point_of_a_missing_run_is_refused(api: Api, engine: Engine) -> None:
    with pytest.raises(IntegrityError):
        _insert_point(engine, 999_999)
    # the ingest path itself (on Postgres: COPY, then the staging merge), as the API would call it
    factory = session_factory(engine)
    for first_steps in ({"x": 0}, None):
        with factory() as session, pytest.raises(IntegrityError):
            metric_points.upsert_series(session, 999_999, {("x", 0): (1.0, NOW)}, first_steps)
    assert _count(engine, "metric", 999_999) == 0


def test_deleting_a_run_deletes_its_points_and_summary(api: Api, engine: Engine) -> None:
    a, b = _run(api), _run(api)
    for run in (a, b):
        _post(api, run["id"], [("loss", s, float(s)) for s in range(50)])
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM runs WHERE id = :r"), {"r": a["id"]})
    assert (_count(engine, "metric", a["id"]), _count(engine, "metric_latest", a["id"])) == (0, 0)
    assert (_count(engine, "metric", b["id"]), _count(engine, "metric_latest", b["id"])) == (50, 1)
    # through the cascades above it: experiment -> runs -> metric
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM experiments WHERE id = :e"), {"e": b["experiment_id"]})
    assert (_count(engine, "metric", b["id"]), _count(engine, "metric_latest", b["id"])) == (0, 0)


def test_a_referenced_run_id_cannot_change_nor_a_point_move_to_a_missing_run(
    api: Api, engine: Engine
) -> None:
    run = _run(api)
    _post(api, run["id"], [("loss", 1, 1.0)])
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(text("UPDATE runs SET id = 999999 WHERE id = :r"), {"r": run["id"]})
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(text("UPDATE metric SET run_id = 999999 WHERE run_id = :r"), {"r": run["id"]})
    other = _run(api)
    with engine.begin() as conn:  # to an existing run: allowed, as with a foreign key
        conn.execute(
            text("UPDATE metric SET run_id = :o WHERE run_id = :r"), {"o": other["id"], "r": run["id"]}
        )
    assert _count(engine, "metric", other["id"]) == 1


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_truncating_runs_truncates_metric_and_its_rollups(api: Api, engine: Engine) -> None:
    run = _run(api)
    _post(api, run["id"], [("loss", 1, 1.0)])
    with engine.begin() as conn:
        conn.execute(text("TRUNCATE runs CASCADE"))
        assert conn.execute(text("SELECT count(*) FROM metric")).scalar_one() == 0
        assert conn.execute(text("SELECT count(*) FROM metric_rollup")).scalar_one() == 0


def _pg(api: Api) -> psycopg.Connection[Any]:
    return psycopg.connect(api.settings.database_url.replace("postgresql+psycopg://", "postgresql://"))


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_run_deleted_after_points_went_in_takes_them_along(api: Api, engine: Engine) -> None:
    """The insert holds the run (KEY SHARE) until it commits: the DELETE waits, then its cascade sees the
    committed points. Without that lock the DELETE would pass first and the points would be orphans."""
    run = _run(api)
    with _pg(api) as writer, _pg(api) as deleter:
        writer.execute(
            "INSERT INTO metric (run_id, key, step, value, time) SELECT %s, 'x', g, 0, now() "
            "FROM generate_series(0, 99) g",
            (run["id"],),
        )
        done: list[int] = []

        def delete() -> None:
            deleter.execute("DELETE FROM runs WHERE id = %s", (run["id"],))
            deleter.commit()
            done.append(1)

        t = threading.Thread(target=delete)
        t.start()
        t.join(0.5)  # normally still waiting for the writer's lock; either way the outcome is the same
        writer.commit()
        t.join(60)
        assert done == [1]
    assert _count(engine, "metric", run["id"]) == 0


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_points_for_a_run_being_deleted_are_refused(api: Api, engine: Engine) -> None:
    """The run's DELETE is not committed yet: the insert waits for it, then fails (no orphans)."""
    run = _run(api)
    with _pg(api) as writer, _pg(api) as deleter:
        deleter.execute("DELETE FROM runs WHERE id = %s", (run["id"],))
        errors: list[BaseException] = []

        def insert() -> None:
            try:
                with (
                    writer.cursor() as cur,
                    cur.copy("COPY metric (run_id, key, step, value, time) FROM STDIN") as cp,
                ):
                    for s in range(100):
                        cp.write_row((run["id"], "x", s, 0.0, NOW))
                writer.commit()
            except psycopg.Error as exc:
                errors.append(exc)
                writer.rollback()

        t = threading.Thread(target=insert)
        t.start()
        t.join(0.5)
        deleter.commit()
        t.join(60)
        assert len(errors) == 1 and isinstance(errors[0], psycopg.errors.ForeignKeyViolation), errors
    assert _count(engine, "metric", run["id"]) == 0


def test_summary_keeps_the_largest_step_whatever_the_order(api: Api) -> None:
    run = _run(api)
    _post(api, run["id"], [("loss", 5, 0.5), ("acc", 1, 0.1)])
    _post(api, run["id"], [("loss", 3, 0.3), ("acc", 2, 0.2)])  # an older loss arrives late
    _post(api, run["id"], [("loss", 5, None)])  # the same step re-sent: the later write wins
    got = api.client.get(f"/api/v1/runs/{run['id']}", headers=api.h()).json()["summary"]
    assert got == {"acc": 0.2, "loss": None}
    listed = api.client.get(f"/api/v1/experiments/{run['experiment_id']}", headers=api.h()).json()["runs"]
    assert listed[0]["summary"] == got
    m = api.client.get(f"/api/v1/runs/{run['id']}/metrics?keys=loss", headers=api.h()).json()["series"][
        "loss"
    ]
    assert [(b["step_start"], b["last"]) for b in m["buckets"]] == [(3, 0.3), (5, None)]


def test_a_point_stored_behind_the_summarys_back_is_overwritten(api: Api, engine: Engine) -> None:
    """The append path (Postgres: COPY straight into metric) is chosen from the summary's latest steps;
    a point it did not know of makes the COPY fail, and the batch goes through the merge instead."""
    run = _run(api)
    _post(api, run["id"], [("x", 1, 1.0)])
    _insert_point(engine, run["id"], step=7)  # not in metric_latest: the batch below looks like an append
    _post(api, run["id"], [("x", s, -float(s)) for s in range(2, 10)])
    got = api.client.get(f"/api/v1/runs/{run['id']}/metrics?keys=x", headers=api.h()).json()["series"]["x"]
    assert [(b["step_start"], b["last"]) for b in got["buckets"]] == [(1, 1.0)] + [
        (s, -float(s)) for s in range(2, 10)
    ]


def test_overlapping_batches_posted_concurrently_in_different_orders_all_succeed(api: Api) -> None:
    """Retries racing each other: the same points, each poster in its own order; every post succeeds
    (a COPY that meets another writer's points falls back to the ordered merge)."""
    run = _run(api)
    points = [(k, s, float(s) * (i + 1)) for s in range(300) for i, k in enumerate(("a", "b", "c"))]
    orders = [points, points[::-1], sorted(points, key=lambda p: (p[0], -p[1])), points[1::2] + points[::2]]
    codes: list[int] = []
    barrier = threading.Barrier(len(orders) * 2)

    def post(batch: list[tuple[str, int, float]]) -> None:
        barrier.wait()
        body = {"points": [{"key": k, "step": s, "value": v} for k, s, v in batch]}
        codes.append(
            api.client.post(f"/api/v1/runs/{run['id']}/metrics", json=body, headers=api.worker).status_code
        )

    threads = [threading.Thread(target=post, args=(o,)) for o in orders * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert codes == [200] * len(threads)
    got = api.client.get(f"/api/v1/runs/{run['id']}/metrics?keys=a,b,c", headers=api.h()).json()["series"]
    for i, k in enumerate(("a", "b", "c")):
        assert [b["last"] for b in got[k]["buckets"]] == [float(s) * (i + 1) for s in range(300)]
    assert api.client.get(f"/api/v1/runs/{run['id']}", headers=api.h()).json()["summary"] == {
        "a": 299.0,
        "b": 598.0,
        "c": 897.0,
    }


def test_migration_0003_moves_the_summary_both_ways(api: Api, engine: Engine) -> None:
    run = _run(api)
    _post(api, run["id"], [("loss", 9, 0.9), ("loss", 2, 0.2), ("acc", 4, None)])
    empty = _run(api)
    cfg = alembic_config(api.settings.database_url)
    engine.dispose()
    command.downgrade(cfg, "0002")
    try:
        with engine.connect() as conn:
            rows = dict(conn.execute(text("SELECT id, summary FROM runs")).all())
        summary = rows[run["id"]]
        summary = summary if isinstance(summary, dict) else json.loads(summary)
        assert summary == {"loss": 0.9, "acc": None, "_steps": {"loss": 9, "acc": 4}}
        empty_summary = rows[empty["id"]]
        assert empty_summary in ({}, "{}")
        with pytest.raises(DBAPIError, match=r"(?i)foreign key"):  # the declared foreign key is back
            _insert_point(engine, 999_999)
    finally:
        engine.dispose()
        command.upgrade(cfg, "head")
    engine.dispose()
    got = api.client.get(f"/api/v1/runs/{run['id']}", headers=api.h()).json()["summary"]
    assert got == {"acc": None, "loss": 0.9}
    _post(api, run["id"], [("loss", 10, 1.0)])
    assert api.client.get(f"/api/v1/runs/{run['id']}", headers=api.h()).json()["summary"]["loss"] == 1.0
