"""The MLflow mirror (backend/mirror/): the API copies runs from the database into MLflow, exactly (one
MLflow point per key and step, with the platform's final value) whatever happens between: points re-sent
with the same or another value, an API killed between MLflow's acknowledgement and its commit, MLflow
down, steps far apart (the work is counted in MLflow calls and SQL statements, not time). On SQLite and
Postgres, against a real MLflow sqlite store."""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, select, text, update

from backend.db import get_engine, session_factory, session_scope, utcnow
from backend.mirror import repository as repo
from backend.mirror.mlflow import MlflowTarget
from backend.mirror.service import Mirror, TickReport
from backend.models import MirrorRun, MirrorSeries, Run, RunAttempt
from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)


@pytest.fixture(scope="module")
def mlflow_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One sqlite MLflow store for the module (its schema takes seconds to make); runs are told apart by
    their experiment and run ids."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


class Crash(BaseException):
    """The API process killed (kill -9) right there: nothing after it runs, no except clause sees it."""


class Target:
    """The real MLflow target, counted; ``down`` plays an MLflow that refuses connections, ``crash_after``
    kills the API right after MLflow acknowledged the n-th call of a method."""

    def __init__(self, real: MlflowTarget) -> None:
        self.real = real
        self.calls: Counter[str] = Counter()
        self.down = False
        self.crash_after: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.real, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                raise ConnectionError("MLflow: connection refused")
            self.calls[name] += 1
            result = method(*args, **kwargs)
            if self.crash_after.get(name) == self.calls[name]:
                raise Crash(name)
            return result

        return call


@pytest.fixture
def target(mlflow_uri: str, tmp_path: Path) -> Target:
    return Target(MlflowTarget(mlflow_uri, tmp_path / "mlflow-artifacts"))


def _mirror(api: Api, target: Target, **settings: Any) -> Mirror:
    s = api.settings.model_copy(update={"mirror_interval": 0.001, **settings})
    return Mirror(s, session_factory(get_engine(s.database_url)), target=target)  # type: ignore[arg-type]


def _drain(mirror: Mirror, rounds: int = 50) -> TickReport:
    """Ticks until one writes nothing to MLflow (a running run stays pending: it may log more); the sum
    of their reports."""
    total = TickReport()
    for _ in range(rounds):
        report = mirror.tick()
        for field in ("runs", "points", "writes", "failed", "rebuilt"):
            setattr(total, field, getattr(total, field) + getattr(report, field))
        if report.writes == 0 and not report.failed:
            return total
    raise AssertionError(f"the mirror still has work after {rounds} rounds")


def _start(api: Api, spec: dict[str, Any] | None = None) -> int:
    run = api.submit(spec or {"train": {"steps": 10}}).json()["runs"][0]
    r = api.client.post(
        f"/api/v1/runs/{run['id']}/claim", json={"attempt": 1, "worker": "w1"}, headers=api.worker
    )
    assert r.status_code == 200, r.text
    return int(run["id"])


def _post(api: Api, rid: int, points: dict[str, dict[int, float | None]], attempt: int = 1) -> None:
    body = {
        "attempt": attempt,
        "points": [
            {"key": k, "step": s, "value": v} for k, series in points.items() for s, v in series.items()
        ],
    }
    r = api.client.post(f"/api/v1/runs/{rid}/metrics", json=body, headers=api.worker)
    assert r.status_code == 200, r.text


def _finish(api: Api, rid: int, status: str = "succeeded", attempt: int = 1) -> None:
    r = api.client.post(
        f"/api/v1/runs/{rid}/finish", json={"attempt": attempt, "status": status}, headers=api.worker
    )
    assert r.status_code == 200, r.text


def _mlflow_id(api: Api, rid: int) -> str:
    got = api.client.get(f"/api/v1/runs/{rid}", headers=api.h()).json()["mlflow_run_id"]
    assert got, "runs.mlflow_run_id is recorded (the run page's 'Open in MLflow')"
    return str(got)


def _history(target: Target, mlflow_run_id: str, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in target.real.client.get_metric_history(mlflow_run_id, key))


def _assert_exact(target: Target, mlflow_run_id: str, expected: dict[str, dict[int, float | None]]) -> None:
    """One MLflow point per (key, step), with the platform's value (a gap is NaN)."""
    for key, series in expected.items():
        got = _history(target, mlflow_run_id, key)
        assert [s for s, _ in got] == sorted(series), f"{key}: steps missing or duplicated"
        for step, value in got:
            want = series[step]
            assert (math.isnan(value) and want is None) or value == want, (key, step, value, want)


def _alive(target: Target, mlflow_run_id: str) -> list[str]:
    """The active MLflow runs of the platform run mirrored to ``mlflow_run_id`` (found by its identity:
    the store is shared by the module's tests, whose databases reuse run ids)."""
    run = target.real.client.get_run(mlflow_run_id)
    tags = run.data.tags
    found = target.real.client.search_runs(
        [run.info.experiment_id],
        filter_string=f"tags.`reasonlab.run_id` = '{tags['reasonlab.run_id']}' and "
        f"tags.`reasonlab.created` = '{tags['reasonlab.created']}'",
    )
    return [r.info.run_id for r in found]


@pytest.mark.heavy
def test_a_run_is_mirrored_whole(api: Api, target: Target, tmp_path: Path) -> None:
    """The MLflow run as the workers made it (experiment, name, tags, spec params) plus every point, the
    result records, the outputs and final model from the artifact store and the status."""
    rid = _start(api, {"seed": 3, "train": {"steps": 30, "lr": 0.02}})
    loss = {s: 1.0 / (s + 1) for s in range(2500)}
    acc = {s: s / 10 for s in range(0, 2500, 10)}
    for lo in range(0, 2500, 1000):
        _post(api, rid, {"loss": {s: loss[s] for s in range(lo, min(lo + 1000, 2500))}})
    _post(api, rid, {"acc": acc, "odd key:1": {0: None, 1: 2.0}})
    mirror = _mirror(api, target)
    report = _drain(mirror)
    mid = _mlflow_id(api, rid)
    run = target.real.client.get_run(mid)
    assert run.info.run_name == f"run-{rid}" and run.info.status == "RUNNING"
    experiment = target.real.client.get_experiment(run.info.experiment_id)
    assert experiment.name.startswith("reasonlab/experiment-")
    assert run.data.tags["reasonlab.run_id"] == str(rid) and run.data.tags["reasonlab.attempt"] == "1"
    assert run.data.tags["reasonlab.kind"] == "diagnostic" and run.data.tags["reasonlab.worker"] == "w1"
    assert run.data.params["train.lr"] == "0.02" and run.data.params["seed"] == "3"
    # while the run is running, each series' latest step is held back (it may be logged again)
    assert _history(target, mid, "loss")[-1][0] == 2498 and report.points == 2499 + 249 + 1
    assert target.calls["log_metrics"] == 3  # 1,000 points a call

    result = {"kind": "diagnostic", "final_loss": 0.1, "initial_loss": 1.0, "steps": 30, "parameters": 9}
    r = api.client.post(
        f"/api/v1/runs/{rid}/results",
        json={"kind": "diagnostic", "payload": result, "key": "diagnostic:0", "attempt": 1},
        headers=api.worker,
    )
    assert r.status_code == 201, r.text
    for path, body in (("outputs/table.csv", b"a,b\n1,2\n"), ("model/step-30.pt", b"weights")):
        put = api.client.put(
            f"/api/v1/runs/{rid}/artifacts/{path}", params={"attempt": 1}, content=body, headers=api.worker
        )
        assert put.status_code == 200, put.text
    _finish(api, rid)
    _drain(mirror)
    run = target.real.client.get_run(mid)
    assert run.info.status == "FINISHED"
    _assert_exact(target, mid, {"loss": loss, "acc": acc, "odd key_1": {0: None, 1: 2.0}})
    names = {a.path for a in target.real.client.list_artifacts(mid, "results")}
    assert names == {"results/diagnostic-000.json"}
    local = target.real.client.download_artifacts(mid, "results/diagnostic-000.json", str(tmp_path))
    assert json.loads(Path(local).read_text())["steps"] == 30
    assert [a.path for a in target.real.client.list_artifacts(mid, "model")] == ["model/step-30.pt"]
    assert [a.path for a in target.real.client.list_artifacts(mid, "outputs")] == ["outputs/table.csv"]
    # done: nothing pending, and more rounds send nothing
    calls = sum(target.calls.values())
    assert _drain(mirror).runs == 0 and sum(target.calls.values()) == calls


@pytest.mark.heavy
def test_points_sent_again_keep_the_mirror_exact(api: Api, target: Target) -> None:
    """The same points again (a retry, a bit-exact resumed attempt) change nothing; a point sent again with
    another value, or a new one below the mirrored steps, makes the mirror rebuild the MLflow run from the
    database (MLflow appends a re-logged step), once the run finished however many such changes came: in
    the end one point per step, the final values."""
    rid = _start(api)
    loss = {s: float(s) for s in range(1, 101)}
    _post(api, rid, {"loss": loss})
    mirror = _mirror(api, target)
    _drain(mirror)
    first = _mlflow_id(api, rid)
    _post(api, rid, {"loss": {s: loss[s] for s in range(50, 101)}})  # the same values again
    assert _drain(mirror).rebuilt == 0 and _mlflow_id(api, rid) == first
    _assert_exact(target, first, {"loss": {s: loss[s] for s in range(1, 100)}})
    _post(api, rid, {"loss": {100: -1.0}})  # the held-back latest step, logged again: no rebuild
    assert _drain(mirror).rebuilt == 0
    loss[100] = -1.0

    loss.update({s: s * 2.0 for s in range(60, 80)})  # a resumed attempt that is not bit-exact
    _post(api, rid, {"loss": {s: loss[s] for s in range(60, 80)}})
    loss[0] = 7.0  # and a new point below the mirrored steps
    _post(api, rid, {"loss": {0: 7.0}})
    loss.update({101: 1.0, 102: 2.0})  # the run goes on
    _post(api, rid, {"loss": {101: 1.0, 102: 2.0}})
    # while the run is active the mirror goes on in the same MLflow run, marked stale (the run may
    # change more); it is rebuilt once, when the run finished
    assert _drain(mirror).rebuilt == 0 and _mlflow_id(api, rid) == first
    assert [s for s, _ in _history(target, first, "loss")][-2:] == [100, 101]
    factory = session_factory(get_engine(api.settings.database_url))
    with session_scope(factory) as session:
        assert session.get(MirrorRun, rid).stale  # type: ignore[union-attr]
    _finish(api, rid)
    report = _drain(mirror)
    assert report.rebuilt == 1
    second = _mlflow_id(api, rid)
    assert second != first
    assert target.real.client.get_run(first).info.lifecycle_stage == "deleted"
    _assert_exact(target, second, {"loss": loss})
    assert target.real.client.get_run(second).info.status == "FINISHED"
    assert _alive(target, second) == [second]
    with session_scope(factory) as session:
        assert not session.get(MirrorRun, rid).stale  # type: ignore[union-attr]

    # a point of the finished run rewritten (a notebook): rebuilt at once
    r = api.client.post(
        f"/api/v1/runs/{rid}/metrics",
        json={"points": [{"key": "loss", "step": 5, "value": 0.25}]},
        headers=api.h(),
    )
    assert r.status_code == 200, r.text
    loss[5] = 0.25
    assert _drain(mirror).rebuilt == 1
    third = _mlflow_id(api, rid)
    _assert_exact(target, third, {"loss": loss})
    assert target.real.client.get_run(third).info.status == "FINISHED" and _alive(target, third) == [third]


def test_ingest_notes_only_changed_points(api: Api) -> None:
    """What ingest tells the mirror: a re-sent batch with the same values leaves the watermarks' seq alone;
    another value, or a new point below the latest step, bumps it and records the smallest such step."""
    rid = _start(api)
    _post(api, rid, {"a": {s: float(s) for s in range(10)}, "b": {0: 1.0}})
    factory = session_factory(get_engine(api.settings.database_url))

    def rows() -> dict[str, tuple[int, int | None]]:
        with session_scope(factory) as session:
            got = session.execute(
                select(MirrorSeries.key, MirrorSeries.seq, MirrorSeries.changed_from).where(
                    MirrorSeries.run_id == rid
                )
            )
            return {k: (seq, ch) for k, seq, ch in got}

    assert rows() == {}
    _post(api, rid, {"a": {s: float(s) for s in range(5, 12)}})  # overlaps, same values, then new steps
    assert rows() == {}
    _post(api, rid, {"a": {7: 0.5, 3: 3.0}, "b": {0: 1.0}})
    assert rows() == {"a": (1, 7)}
    _post(api, rid, {"b": {0: None}, "a": {2: 2.5}})
    assert rows() == {"a": (2, 2), "b": (1, 0)}


def test_new_points_below_the_latest_step_alone_are_noted(api: Api) -> None:
    """A batch of only new points, some below a series' latest step (MLflow's client sends from several
    threads, so its batches arrive out of order), is appended without a merge and still noted for the
    mirror: the smallest such step of each series, as a merge notes it; steps above the latest are not."""
    rid = _start(api)
    _post(api, rid, {"a": {s: float(s) for s in range(0, 20, 2)}, "b": {5: 1.0}})
    engine = get_engine(api.settings.database_url)
    factory = session_factory(engine)

    def rows() -> dict[str, tuple[int, int | None]]:
        with session_scope(factory) as session:
            got = session.execute(
                select(MirrorSeries.key, MirrorSeries.seq, MirrorSeries.changed_from).where(
                    MirrorSeries.run_id == rid
                )
            )
            return {k: (seq, ch) for k, seq, ch in got}

    _post(api, rid, {"a": {9: 9.0, 7: 7.0, 30: 30.0}, "b": {6: 6.0}})
    assert rows() == {"a": (1, 7)}
    _post(api, rid, {"a": {1: 1.0}})
    assert rows() == {"a": (2, 1)}
    with engine.connect() as conn:
        stored = conn.execute(
            text("SELECT key, step FROM metric WHERE run_id = :r ORDER BY key, step"), {"r": rid}
        ).all()
    assert [tuple(r) for r in stored] == [
        *(("a", s) for s in sorted([*range(0, 20, 2), 1, 7, 9, 30])),
        ("b", 5),
        ("b", 6),
    ]


def test_api_killed_between_mlflow_and_its_commit(api: Api, target: Target) -> None:
    """kill -9 of the API after MLflow made the run but before runs.mlflow_run_id was committed, then after
    MLflow took a batch of points but before the watermark was committed: the restarted mirror finds the
    same MLflow run (by its tags) and sends the batch again, which MLflow ignores (the same points, the
    same timestamps). One MLflow run, one point per step."""
    rid = _start(api)
    loss = {s: s / 7 for s in range(3000)}
    for lo in range(0, 3000, 1000):
        _post(api, rid, {"loss": {s: loss[s] for s in range(lo, lo + 1000)}})
    _finish(api, rid)
    target.crash_after = {"ensure_run": 1}
    with pytest.raises(Crash):
        _mirror(api, target).tick()
    factory = session_factory(get_engine(api.settings.database_url))
    with session_scope(factory) as session:
        assert session.get(MirrorRun, rid).mlflow_run_id is None  # type: ignore[union-attr]
    target.crash_after = {"log_metrics": 2}
    with pytest.raises(Crash):
        _mirror(api, target).tick()  # a restarted API
    with session_scope(factory) as session:
        assert session.get(MirrorSeries, (rid, "loss")).sent_step == 999  # type: ignore[union-attr]
    target.crash_after = {}
    _drain(_mirror(api, target))
    mid = _mlflow_id(api, rid)
    assert _alive(target, mid) == [mid], "the crash left no second MLflow run"
    _assert_exact(target, mid, {"loss": loss})
    assert target.real.client.get_run(mid).info.status == "FINISHED"


@pytest.mark.heavy
def test_far_apart_steps_cost_what_the_points_cost(api: Api, target: Target) -> None:
    """A point at step 0 and one at step 5,200,000,000: one MLflow metric call and a handful of SQL
    statements (the workers' catch-up walked 520,000 windows of 10,000 steps for these two points)."""
    rid = _start(api)
    _post(api, rid, {"loss": {0: 1.0, 5_200_000_000: 2.0}})
    _finish(api, rid)
    mirror = _mirror(api, target)
    engine = get_engine(api.settings.database_url)
    statements: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        _drain(mirror)
    finally:
        event.remove(engine, "before_cursor_execute", count)
    mid = _mlflow_id(api, rid)
    _assert_exact(target, mid, {"loss": {0: 1.0, 5_200_000_000: 2.0}})
    assert target.calls["log_metrics"] == 1
    assert sum(target.calls.values()) <= 5, target.calls  # the run, params, the points, the status
    assert len(statements) <= 20, statements  # 13 on both databases when written


def test_mlflow_down_then_up_loses_nothing(api: Api, target: Target) -> None:
    rid = _start(api)
    loss = {s: float(s) for s in range(1, 51)}
    _post(api, rid, {"loss": {s: loss[s] for s in range(1, 21)}})
    mirror = _mirror(api, target)
    target.down = True
    report = mirror.tick()
    assert report.failed == 1
    factory = session_factory(get_engine(api.settings.database_url))
    with session_scope(factory) as session:
        row = session.get(MirrorRun, rid)
        assert row is not None and row.failures == 1 and row.retry_at is not None and row.pending
        assert "connection refused" in (row.error or "")
    _post(api, rid, {"loss": {s: loss[s] for s in range(21, 41)}})  # the run goes on meanwhile
    _mirror(api, target).tick()
    with session_scope(factory) as session:
        session.execute(update(MirrorRun).values(retry_at=None))  # the backoff is over
    report = mirror.tick()
    assert report.failed == 1  # still down
    target.down = False
    _post(api, rid, {"loss": {s: loss[s] for s in range(41, 51)}})
    _finish(api, rid, "failed")
    with session_scope(factory) as session:
        session.execute(update(MirrorRun).values(retry_at=None))
    _drain(mirror)
    mid = _mlflow_id(api, rid)
    _assert_exact(target, mid, {"loss": loss})
    assert target.real.client.get_run(mid).info.status == "FAILED"
    with session_scope(factory) as session:
        row = session.get(MirrorRun, rid)
        assert row is not None and not row.pending and row.failures == 0 and row.error is None


def test_a_run_cancelled_while_queued_never_reaches_mlflow(api: Api, target: Target) -> None:
    run = api.submit({}).json()["runs"][0]
    assert (
        api.client.post(f"/api/v1/runs/{run['id']}/cancel", headers=api.h()).json()["status"] == "cancelled"
    )
    mirror = _mirror(api, target)
    assert _drain(mirror).runs == 1
    assert sum(target.calls.values()) == 0
    assert api.client.get(f"/api/v1/runs/{run['id']}", headers=api.h()).json()["mlflow_run_id"] is None


def test_a_new_attempt_reopens_the_mlflow_run(api: Api, target: Target) -> None:
    """A failed run retried: the same MLflow run, tagged with the new attempt, running again, then
    finished; the steps the new attempt logs again (bit-exact) are not duplicated."""
    rid = _start(api)
    loss = {s: s / 3 for s in range(1, 31)}
    _post(api, rid, {"loss": {s: loss[s] for s in range(1, 21)}})
    _finish(api, rid, "failed")
    mirror = _mirror(api, target)
    _drain(mirror)
    mid = _mlflow_id(api, rid)
    assert target.real.client.get_run(mid).info.status == "FAILED"
    assert api.client.post(f"/api/v1/runs/{rid}/retry", headers=api.h()).status_code == 200
    r = api.client.post(f"/api/v1/runs/{rid}/claim", json={"attempt": 2, "worker": "w2"}, headers=api.worker)
    assert r.status_code == 200, r.text
    _post(api, rid, {"loss": {s: loss[s] for s in range(11, 26)}}, attempt=2)  # resumed from step 10
    _drain(mirror)
    run = target.real.client.get_run(mid)
    assert run.info.status == "RUNNING" and run.data.tags["reasonlab.attempt"] == "2"
    assert run.data.tags["reasonlab.worker"] == "w2"
    _post(api, rid, {"loss": {s: loss[s] for s in range(26, 31)}}, attempt=2)
    _finish(api, rid, attempt=2)
    assert _drain(mirror).rebuilt == 0
    assert _mlflow_id(api, rid) == mid
    _assert_exact(target, mid, {"loss": loss})
    assert target.real.client.get_run(mid).info.status == "FINISHED"


def test_the_mlflow_run_lasts_the_run_time(api: Api, target: Target) -> None:
    """MLflow's duration (its end time less its start time) is ReasonLab's run time,
    the seconds of the run's attempts without the downtime between them (a worker shut down, the next one
    took the run 40 minutes later); the MLflow run starts when the run started."""
    rid = _start(api)
    _post(api, rid, {"loss": {1: 1.0, 2: 0.5}})
    r = api.client.post(f"/api/v1/runs/{rid}/release", json={"attempt": 1}, headers=api.worker)
    assert r.status_code == 200, r.text
    r = api.client.post(f"/api/v1/runs/{rid}/claim", json={"attempt": 2, "worker": "w2"}, headers=api.worker)
    assert r.status_code == 200, r.text
    # the attempts as they happened: 10 minutes from t0, then 40 minutes of downtime, then 10 more
    t0 = utcnow().replace(microsecond=0) - timedelta(hours=1)
    spans = {1: (t0, t0 + timedelta(minutes=10)), 2: (t0 + timedelta(minutes=50), None)}
    factory = session_factory(get_engine(api.settings.database_url))
    with session_scope(factory) as s:
        s.execute(update(Run).where(Run.id == rid).values(started_at=t0))
        for attempt, (start, end) in spans.items():
            s.execute(
                update(RunAttempt)
                .where(RunAttempt.run_id == rid, RunAttempt.attempt == attempt)
                .values(started_at=start, ended_at=end)
            )
    mirror = _mirror(api, target)
    _drain(mirror)  # the MLflow run is made while attempt 2 runs
    mid = _mlflow_id(api, rid)
    assert target.real.client.get_run(mid).info.start_time == int(t0.timestamp() * 1000)
    _finish(api, rid, attempt=2)
    with session_scope(factory) as s:
        s.execute(
            update(RunAttempt)
            .where(RunAttempt.run_id == rid, RunAttempt.attempt == 2)
            .values(ended_at=t0 + timedelta(hours=1))
        )
    run_seconds = api.client.get(f"/api/v1/runs/{rid}", headers=api.h()).json()["run_seconds"]
    assert run_seconds == 20 * 60  # the run page's run time: the downtime is not counted
    _drain(mirror)
    info = target.real.client.get_run(mid).info
    assert info.status == "FINISHED" and info.start_time == int(t0.timestamp() * 1000)
    assert info.end_time - info.start_time == round(run_seconds * 1000)


def test_points_added_to_a_finished_run_are_mirrored(api: Api, target: Target) -> None:
    """A member adds an evaluation to a finished run from a notebook: the mirror has work again."""
    rid = _start(api)
    _post(api, rid, {"loss": {1: 1.0}})
    _finish(api, rid)
    mirror = _mirror(api, target)
    _drain(mirror)
    r = api.client.post(
        f"/api/v1/runs/{rid}/metrics",
        json={"points": [{"key": "eval", "step": 1, "value": 0.5}]},
        headers=api.h(),
    )
    assert r.status_code == 200, r.text
    _drain(mirror)
    _assert_exact(target, _mlflow_id(api, rid), {"loss": {1: 1.0}, "eval": {1: 0.5}})


def test_one_mirror_among_api_processes(api: Api, target: Target) -> None:
    """On Postgres the mirror of one API process holds an advisory lock; another process's waits."""
    if api.settings.is_sqlite:
        pytest.skip("embedded mode has one API process")
    first, second = _mirror(api, target), _mirror(api, target)
    try:
        assert first._leader() and first._leader()
        assert not second._leader()
        first._release_lock()
        assert second._leader()
    finally:
        first._release_lock()
        second._release_lock()


def test_the_loop_mirrors_in_the_background(api: Api, target: Target) -> None:
    rid = _start(api)
    _post(api, rid, {"loss": {1: 1.0, 2: 2.0}})
    _finish(api, rid)
    mirror = _mirror(api, target)
    mirror.start()
    try:
        factory = session_factory(get_engine(api.settings.database_url))
        for _ in range(500):
            with session_scope(factory) as session:
                row = session.get(MirrorRun, rid)
                if row is not None and not row.pending:
                    break
            mirror.wake()
            time.sleep(0.02)
        else:
            raise AssertionError("the loop did not mirror the run")
    finally:
        mirror.stop()
    _assert_exact(target, _mlflow_id(api, rid), {"loss": {1: 1.0, 2: 2.0}})


def test_migration_adopts_the_runs_workers_mirrored(database_url: str, home: Path) -> None:
    """Upgrading to 0007: a run a worker mirrored keeps its MLflow run, its series count as sent up to
    their latest step; a run that started without one is queued for the mirror; a queued one is not."""
    from alembic import command

    from backend.bootstrap import alembic_config

    config = alembic_config(database_url)
    command.upgrade(config, "head")  # a new database, or the migrated template's clone (Postgres)
    command.downgrade(config, "0006")
    engine = get_engine(database_url)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO projects (id, name, description, created_at) VALUES (1, 'p', '', CURRENT_TIMESTAMP)"
            )
        )
        conn.execute(
            text(
                "INSERT INTO experiments (id, project_id, name, description, kind, spec, created_at) "
                "VALUES (1, 1, 'e', '', 'diagnostic', '{}', CURRENT_TIMESTAMP)"
            )
        )
        for rid, status, mlflow in (
            (1, "succeeded", "abc"),
            (2, "running", "def"),
            (3, "failed", None),
            (4, "queued", None),
        ):
            conn.execute(
                text(
                    'INSERT INTO runs (id, experiment_id, project_id, kind, "index", spec, params, queue, status, '
                    "attempt, max_attempts, progress_done, progress_total, progress_message, cancel_requested, "
                    "dispatched, mlflow_run_id, created_at, updated_at) VALUES (:id, 1, 1, 'diagnostic', :id, "
                    "'{}', '{}', 'cpu', :status, 2, 3, 0, 0, '', false, true, :mlflow, CURRENT_TIMESTAMP, "
                    "CURRENT_TIMESTAMP)"
                ).bindparams(id=rid, status=status, mlflow=mlflow)
            )
            conn.execute(
                text(
                    "INSERT INTO metric_latest (run_id, key, step, value) VALUES (:id, 'loss', 41, 0.5)"
                ).bindparams(id=rid)
            )
    command.upgrade(config, "head")
    with engine.begin() as conn:
        runs = conn.execute(
            text("SELECT run_id, pending, mlflow_run_id, attempt, done FROM mirror_runs ORDER BY run_id")
        ).all()
        series = conn.execute(text("SELECT run_id, key, sent_step FROM mirror_series ORDER BY run_id")).all()
    assert [(r[0], bool(r[1]), r[2], r[3], r[4]) for r in runs] == [
        (1, False, "abc", 2, "2:succeeded"),
        (2, True, "def", 2, None),
        (3, True, None, None, None),
    ]
    assert [tuple(r) for r in series] == [(1, "loss", 41), (2, "loss", 41)]
    # the trigger: a status change queues the run for the mirror
    with engine.begin() as conn:
        conn.execute(text("UPDATE runs SET status = 'running' WHERE id = 4"))
        assert conn.execute(text("SELECT pending, wanted FROM mirror_runs WHERE run_id = 4")).one() == (
            True,
            1,
        )
        conn.execute(text("UPDATE runs SET status = 'succeeded' WHERE id = 1"))
        conn.execute(text("UPDATE runs SET status = 'running' WHERE id = 1"))
        assert tuple(
            conn.execute(text("SELECT pending, wanted FROM mirror_runs WHERE run_id = 1")).one()
        ) == (True, 2)
    command.downgrade(config, "0006")
    command.upgrade(config, "head")


def test_note_changes_is_bounded_by_the_batch(api: Api) -> None:
    """Ingest looks up only the batch's points at or below each series' latest step, by primary key."""
    rid = _start(api)
    _post(api, rid, {"a": {0: 0.0, 5_000_000_000: 1.0}})
    factory = session_factory(get_engine(api.settings.database_url))
    with session_scope(factory) as session:
        changed = repo.note_changes(
            session, rid, {("a", 3): (1.0, None), ("a", 5_000_000_001): (1.0, None)}, {"a": 5_000_000_000}
        )
    assert changed == {"a": 3}


def test_a_new_sqlite_mlflow_store_is_made_whole_or_not_at_all(tmp_path: Path) -> None:
    """MLflow's own table migrations are not transactional on SQLite: an API killed while it made the store
    left a broken one. The store is made under a temporary name and linked into place."""
    from mlflow import MlflowClient

    from backend.mirror.mlflow import init_sqlite_store

    path = tmp_path / "home" / "mlflow.db"
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".mlflow.db.init-999999").write_bytes(b"half a store")  # a killed process's
    init_sqlite_store(path)
    assert path.is_file() and sorted(p.name for p in path.parent.iterdir()) == ["mlflow.db"]
    assert MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments()  # a working store
    before = path.stat().st_ino
    init_sqlite_store(path)  # an existing store (made by MLflow's UI server, or earlier) is kept
    assert path.stat().st_ino == before


def _log_params(api: Api, rid: int, params: dict[str, Any], attempt: int | None = 1) -> None:
    body: dict[str, Any] = {"params": params} if attempt is None else {"params": params, "attempt": attempt}
    headers = api.worker if attempt is not None else api.h()  # the run's attempt, or a member
    r = api.client.post(f"/api/v1/runs/{rid}/params", json=body, headers=headers)
    assert r.status_code == 204, r.text


def _params_and_tags(target: Target, mlflow_run_id: str) -> tuple[dict[str, str], dict[str, str]]:
    data = target.real.client.get_run(mlflow_run_id).data
    return dict(data.params), dict(data.tags)


def test_the_params_a_run_logged_are_mirrored(api: Api, target: Target) -> None:
    """What a kind logs with ctx.log_params (its spec again and derived values) reaches the MLflow run,
    flattened, with MLflow's names and limits. MLflow params are immutable: a key logged again with another
    value keeps the one MLflow got first and the platform's value is the tag reasonlab.param_conflict.<key>.
    Nothing is sent twice; a rebuilt MLflow run gets them again, with the platform's values."""
    rid = _start(api, {"seed": 3, "train": {"steps": 30, "lr": 0.02}})
    spec = api.client.get(f"/api/v1/runs/{rid}", headers=api.h()).json()["spec"]
    derived = {"parameters": 1234, "layers": [1, 2], "odd key:1": "x", "long": "v" * 8000, "none": None}
    _log_params(api, rid, {**spec, "derived": derived})
    _post(api, rid, {"loss": {1: 1.0, 2: 0.5}})
    mirror = _mirror(api, target)
    _drain(mirror)
    mid = _mlflow_id(api, rid)
    params, tags = _params_and_tags(target, mid)
    assert params["derived.parameters"] == "1234" and params["derived.layers"] == "[1, 2]"
    assert params["derived.odd key_1"] == "x" and params["derived.long"] == "v" * 6000
    assert params["derived.none"] == "null"
    assert params["train.lr"] == "0.02" and params["seed"] == "3"  # the spec logged again: the same values
    assert not [t for t in tags if t.startswith("reasonlab.param_conflict.")]
    assert target.calls["run_params"] == 1
    _drain(mirror)  # the run is active (pending): nothing new, nothing asked of MLflow
    assert target.calls["run_params"] == 1

    # logged again with other values, and a new key
    _log_params(api, rid, {"derived": {"parameters": 99}, "seed": 4, "late": 1})
    _drain(mirror)
    params, tags = _params_and_tags(target, mid)
    assert params["derived.parameters"] == "1234" and params["seed"] == "3" and params["late"] == "1"
    assert tags["reasonlab.param_conflict.derived.parameters"] == "99"
    assert tags["reasonlab.param_conflict.seed"] == "4"
    _log_params(api, rid, {"derived": {"parameters": 1234}})  # back to MLflow's value: the tag follows
    _drain(mirror)
    assert _params_and_tags(target, mid)[1]["reasonlab.param_conflict.derived.parameters"] == "1234"
    _finish(api, rid)
    _drain(mirror)
    assert target.real.client.get_run(mid).info.status == "FINISHED"

    # a member adds params to the finished run (a notebook): mirrored; its finish is not redone
    _log_params(api, rid, {"eval": {"score": 0.5}}, attempt=None)
    before = target.calls["log_dict"] + target.calls["set_status"]
    _drain(mirror)
    assert _params_and_tags(target, mid)[0]["eval.score"] == "0.5"
    assert target.calls["log_dict"] + target.calls["set_status"] == before

    # a rebuilt mirror (a point of the finished run rewritten): the new MLflow run has them, the spec's
    # values first
    r = api.client.post(
        f"/api/v1/runs/{rid}/metrics",
        json={"points": [{"key": "loss", "step": 1, "value": 7.0}]},
        headers=api.h(),
    )
    assert r.status_code == 200, r.text
    assert _drain(mirror).rebuilt == 1
    second = _mlflow_id(api, rid)
    assert second != mid
    params, tags = _params_and_tags(target, second)
    assert params["derived.parameters"] == "1234" and params["late"] == "1" and params["eval.score"] == "0.5"
    assert params["seed"] == "3" and tags["reasonlab.param_conflict.seed"] == "4"
    assert "reasonlab.param_conflict.derived.parameters" not in tags


def test_logged_params_survive_a_kill_between_mlflow_and_the_commit(api: Api, target: Target) -> None:
    """kill -9 of the API after MLflow took the params but before params_sent was committed, and the run
    logs a key again with another value meanwhile: the restarted mirror compares with what the MLflow run
    has, so MLflow never sees a param changed (which it refuses) and the mirror does not stall."""
    rid = _start(api)
    _log_params(api, rid, {"derived": {"parameters": 1}})
    target.crash_after = {"log_params": 2}  # the spec's params, then the logged ones
    with pytest.raises(Crash):
        _mirror(api, target).tick()
    _log_params(api, rid, {"derived": {"parameters": 2, "more": "m"}})
    target.crash_after = {}
    mirror = _mirror(api, target)
    report = _drain(mirror)
    assert report.failed == 0
    mid = _mlflow_id(api, rid)
    params, tags = _params_and_tags(target, mid)
    assert params["derived.parameters"] == "1" and params["derived.more"] == "m"
    assert tags["reasonlab.param_conflict.derived.parameters"] == "2"
    factory = session_factory(get_engine(api.settings.database_url))
    with session_scope(factory) as session:
        row = session.get(MirrorRun, rid)
        assert row is not None and row.params_sent == 2 and row.error is None


def test_mlflow_names_every_key(api: Api) -> None:
    """Keys MLflow would refuse (characters, paths, a leading '..', over 250 characters) get names it
    takes: the mirror never stalls on a name."""
    from mlflow.utils.validation import _validate_param_name, _validate_tag_name

    from backend.mirror.mlflow import conflict_tag
    from common.mlflow_names import mlflow_key, param_values

    keys = ["a:b", "../x", "..x", "..", ".", "/a", "a/", "a//b", "x" * 300, "", "a b/c"]
    for name in param_values({k: 1 for k in keys}):
        _validate_param_name(name)
        assert len(name) <= 250
        tag = conflict_tag(name)
        _validate_tag_name(tag)
        assert len(tag) <= 250
    assert mlflow_key("a b/c") == "a b/c" and mlflow_key("..x") == "_..x"
