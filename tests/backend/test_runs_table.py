"""GET /experiments/{id}/runs-table: an experiment's runs as columns for a table of 10,000 runs,
the same facts as ExperimentDetail.runs without the specs; GET /experiments/{id}?with_runs=false."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text, update

from backend.db import get_engine
from backend.experiments import table
from backend.models import Run, RunAttempt
from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)


def test_runs_table_columns_equal_the_detail_runs(api: Api) -> None:
    exp = api.submit({}, sweep={"grid": {"train.lr": [0.1, 0.01, 0.001]}, "seeds": [0, 1]}).json()
    runs = exp["runs"]
    # metrics on some runs only, one non-finite (a null in the summary)
    for r, points in (
        (runs[0], [("loss", 3, 0.5), ("acc", 3, 0.9)]),
        (runs[3], [("loss", 1, 2.0), ("loss", 7, 1.25)]),
        (runs[5], [("acc", 2, None)]),
    ):
        body = {"points": [{"key": k, "step": s, "value": v} for k, s, v in points]}
        assert (
            api.client.post(f"/api/v1/runs/{r['id']}/metrics", json=body, headers=api.worker).status_code
            == 200
        )
    # one run started and finished, one started: timestamps and statuses read raw from the database
    for r, finish in ((runs[1], True), (runs[2], False)):
        url = f"/api/v1/runs/{r['id']}"
        claim = api.client.post(f"{url}/claim", json={"attempt": 1, "worker": "w1"}, headers=api.worker)
        assert claim.status_code == 200
        if finish:
            fin = {"attempt": 1, "status": "succeeded"}
            assert api.client.post(f"{url}/finish", json=fin, headers=api.worker).status_code == 200
    detail = api.client.get(f"/api/v1/experiments/{exp['id']}", headers=api.h()).json()
    table = api.client.get(f"/api/v1/experiments/{exp['id']}/runs-table", headers=api.h()).json()
    want: list[dict[str, Any]] = sorted(detail["runs"], key=lambda r: r["index"])
    assert table["experiment_id"] == exp["id"]
    assert table["status"][1:3] == ["succeeded", "running"] and table["finished_at"][1] is not None
    for field in ("id", "index", "status", "attempt", "created_at", "started_at", "finished_at"):
        assert table[field] == [r[field] for r in want], field
    assert sorted(table["params"]) == ["seed", "train.lr"]
    for name, column in table["params"].items():
        assert column == [r["params"].get(name) for r in want]
    assert table["summary"] == {
        "acc": [0.9, None, None, None, None, None],
        "loss": [0.5, None, None, 1.25, None, None],
    }
    assert [r["summary"] for r in want][5] == {"acc": None}


def test_detail_without_runs_keeps_the_counts(api: Api) -> None:
    exp = api.submit({}, sweep={"grid": {"train.lr": [0.1, 0.01]}}).json()
    r = api.client.get(f"/api/v1/experiments/{exp['id']}", params={"with_runs": "false"}, headers=api.h())
    assert r.status_code == 200
    body = r.json()
    assert body["runs"] == [] and body["run_count"] == 2 and body["status_counts"] == {"queued": 2}


def test_runs_table_needs_a_visible_experiment(api: Api) -> None:
    assert api.client.get("/api/v1/experiments/999999/runs-table", headers=api.h()).status_code == 404
    exp = api.submit({}).json()
    outsider = api.user("outsider", project="elsewhere")
    r = api.client.get(f"/api/v1/experiments/{exp['id']}/runs-table", headers=api.h(outsider))
    assert r.status_code in (403, 404)


def test_sqlite_timestamps_are_written_as_the_datetimes_json() -> None:
    """SQLite's stored text goes to the answer by string operations: the same JSON as the aware datetime
    UTCDateTime reads from it, whatever the fraction (none written when it is zero)."""
    from datetime import UTC, datetime

    from pydantic_core import to_json

    from backend.experiments.table import _times

    stamps = [datetime(2026, 11, 23, 18, 18, 34, us, tzinfo=UTC) for us in (0, 10, 120000, 500000, 581926)]
    stored = [s.replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f") for s in stamps]
    assert to_json(_times([*stored, None])) == to_json([*stamps, None])
    # Postgres' aware datetimes, and naive ones, pass as datetimes
    naive = stamps[2].replace(tzinfo=None)
    assert to_json(_times([stamps[1], naive])) == to_json([stamps[1], stamps[2]])


def test_the_kept_table_follows_every_change_and_is_reused_until_one(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The encoded runs table is built once and served again while nothing in it changes (a heartbeat,
    an older metric step); a new metric value, a re-sent value at the same step, a status change through
    the API or by a plain SQL update, each shows at the next request."""
    built: list[int] = []
    encode = table.runs_table_json

    def counting(session: Any, experiment_id: int) -> bytes:
        built.append(experiment_id)
        return encode(session, experiment_id)

    monkeypatch.setattr(table, "runs_table_json", counting)
    exp = api.submit({}, sweep={"grid": {"train.lr": [0.1, 0.01, 0.001]}}).json()
    run = exp["runs"][0]["id"]
    url = f"/api/v1/experiments/{exp['id']}/runs-table"

    def get() -> dict[str, Any]:
        r = api.client.get(url, headers=api.h())
        assert r.status_code == 200
        return r.json()  # type: ignore[no-any-return]

    def metrics(*points: tuple[str, int, float]) -> None:
        body = {"points": [{"key": k, "step": s, "value": v} for k, s, v in points]}
        r = api.client.post(f"/api/v1/runs/{run}/metrics", json=body, headers=api.worker)
        assert r.status_code == 200

    first = get()
    assert get() == first and len(built) == 1  # reused
    metrics(("loss", 5, 2.0))
    assert get()["summary"] == {"loss": [2.0, None, None]} and len(built) == 2
    metrics(("loss", 3, 9.0))  # an older step: the summary keeps step 5
    assert get()["summary"] == {"loss": [2.0, None, None]} and len(built) == 2
    metrics(("loss", 5, 1.5))  # the same step re-sent with another value
    assert get()["summary"] == {"loss": [1.5, None, None]} and len(built) == 3

    runs_url = f"/api/v1/runs/{run}"
    claim = api.client.post(f"{runs_url}/claim", json={"attempt": 1, "worker": "w1"}, headers=api.worker)
    assert claim.status_code == 200
    claimed = get()
    assert claimed["status"][0] == "running" and claimed["started_at"][0] is not None and len(built) == 4
    beat = api.client.post(f"{runs_url}/heartbeat", json={"attempt": 1}, headers=api.worker)
    assert beat.status_code == 200
    assert get() == claimed and len(built) == 4  # a heartbeat is not in the table

    # a code path that updates a run without the ORM: the database's trigger counts it
    engine = get_engine(api.settings.database_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE runs SET status = 'failed' WHERE id = :id"), {"id": run})
    assert get()["status"][0] == "failed" and len(built) == 5
    with engine.begin() as conn:
        conn.execute(text("UPDATE runs SET params = :p WHERE id = :id"), {"p": '{"train.lr": 7}', "id": run})
    assert get()["params"]["train.lr"][0] == 7 and len(built) == 6
    with engine.begin() as conn:  # a column the table does not show
        conn.execute(text("UPDATE runs SET progress_message = 'half' WHERE id = :id"), {"id": run})
    assert get()["params"]["train.lr"][0] == 7 and len(built) == 6


def test_encoded_tables_keep_the_fingerprint_they_were_built_at_and_a_byte_budget() -> None:
    tables = table.EncodedTables(max_bytes=10)
    tables.put("a", 1, b"aaaa")
    assert tables.get("a", 1) == b"aaaa" and tables.get("a", 2) is None and tables.get("b", 1) is None
    tables.put("b", 1, b"bbbb")
    assert tables.get("a", 1) == b"aaaa"  # a is now the most recently used
    tables.put("c", 1, b"cccc")  # 12 bytes > 10: the least recently used (b) goes
    assert tables.get("b", 1) is None and tables.get("a", 1) == b"aaaa" and tables.get("c", 1) == b"cccc"
    tables.put("a", 2, b"A")  # replaced, not added
    assert tables.get("a", 1) is None and tables.get("a", 2) == b"A"
    tables.put("d", 1, b"x" * 11)  # larger than the budget: not kept
    assert tables.get("d", 1) is None and tables.get("c", 1) == b"cccc"


def _released_then_resumed(api: Api) -> tuple[dict[str, Any], int, datetime]:
    """A run whose attempt 1 worked 10 s an hour ago, was released, and whose attempt 2 started 20 s ago
    (the attempts' times set in the database): an hour of downtime between them. Returns the experiment,
    the run id and attempt 2's start. Attempt 2 ends at the API's clock when a test finishes it: callers
    bound its seconds loosely (25 to 120 in all), so that a step of a few seconds in a VM's clock between
    this read of the clock and the API's cannot fail them."""
    exp = api.submit({}, sweep={"grid": {"train.lr": [0.1, 0.01]}}).json()
    run = exp["runs"][0]["id"]
    url = f"/api/v1/runs/{run}"
    claim = api.client.post(f"{url}/claim", json={"attempt": 1, "worker": "w1"}, headers=api.worker)
    assert claim.status_code == 200
    assert api.client.post(f"{url}/release", json={"attempt": 1}, headers=api.worker).status_code == 200
    now = datetime.now(UTC)
    first = now - timedelta(hours=1)
    engine = get_engine(api.settings.database_url)
    with engine.begin() as conn:
        conn.execute(update(Run).where(Run.id == run).values(started_at=first))
        conn.execute(
            update(RunAttempt)
            .where(RunAttempt.run_id == run, RunAttempt.attempt == 1)
            .values(started_at=first, ended_at=first + timedelta(seconds=10))
        )
    claim = api.client.post(f"{url}/claim", json={"attempt": 2, "worker": "w2"}, headers=api.worker)
    assert claim.status_code == 200
    second = now - timedelta(seconds=20)
    with engine.begin() as conn:
        conn.execute(
            update(RunAttempt)
            .where(RunAttempt.run_id == run, RunAttempt.attempt == 2)
            .values(started_at=second)
        )
    return exp, run, second


def test_the_tables_run_time_excludes_the_downtime_between_attempts(api: Api) -> None:
    """A run released and resumed later has the seconds of its ended attempts and its
    running attempt's start in the table (the duration column counted from the first attempt's start);
    finished, its ended seconds are the run page's run_seconds."""
    exp, run, second = _released_then_resumed(api)
    url = f"/api/v1/experiments/{exp['id']}/runs-table"
    t = api.client.get(url, headers=api.h()).json()
    assert t["status"] == ["running", "queued"] and t["attempt"][0] == 2
    assert t["ended_seconds"][0] == pytest.approx(10.0, abs=0.01)
    assert datetime.fromisoformat(t["attempt_started_at"][0]) == second
    assert (t["ended_seconds"][1], t["attempt_started_at"][1]) == (None, None)  # never started
    fin = {"attempt": 2, "status": "succeeded"}
    assert api.client.post(f"/api/v1/runs/{run}/finish", json=fin, headers=api.worker).status_code == 200
    t = api.client.get(url, headers=api.h()).json()
    page = api.client.get(f"/api/v1/runs/{run}", headers=api.h()).json()
    assert t["status"][0] == "succeeded" and t["attempt_started_at"][0] is None
    assert 25.0 <= t["ended_seconds"][0] < 120.0  # not the hour since the first start
    assert t["ended_seconds"][0] == pytest.approx(page["run_seconds"], abs=0.01)
