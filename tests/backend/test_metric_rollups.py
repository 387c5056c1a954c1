"""Roll-ups kept at ingest (migration 0004): after random batches, retried batches, a resumed run
rewriting its steps and gaps, every roll-up block equals a recomputation from the stored points; the
downsampled query built on them keeps its answer's shape and every bucket's min, max, count and last equal
to the raw points of the bucket's steps (no spike lost), on SQLite and Postgres."""

from __future__ import annotations

import itertools
import random
import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Engine, text

from backend.bootstrap import alembic_config
from backend.db import get_engine, session_factory
from backend.metrics import points as metric_points
from backend.metrics.rollups import ROLLUP_WIDTHS
from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)

Point = tuple[str, int, float | None]


def _post(api: Api, run_id: int, points: list[Point]) -> None:
    body = {"points": [{"key": k, "step": s, "value": v} for k, s, v in points]}
    r = api.client.post(f"/api/v1/runs/{run_id}/metrics", json=body, headers=api.worker)
    assert r.status_code == 200, r.text


def _raw(engine: Engine, run_id: int) -> dict[str, list[tuple[Any, ...]]]:
    """``{key: [(step, value, time), ...]}`` in step order, as stored."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT key, step, value, time FROM metric WHERE run_id = :r ORDER BY key, step"),
            {"r": run_id},
        )
        for key, step, value, t in rows:
            out.setdefault(key, []).append((step, value, t))
    return out


def _recompute(raw: dict[str, list[tuple[Any, ...]]]) -> dict[tuple[str, int, int], tuple[Any, ...]]:
    """The roll-ups from the points, independently: per key, width and block ``step // width``."""
    out: dict[tuple[str, int, int], tuple[Any, ...]] = {}
    for key, points in raw.items():
        for width in ROLLUP_WIDTHS:
            blocks: dict[int, list[tuple[Any, ...]]] = {}
            for p in points:
                blocks.setdefault(p[0] // width, []).append(p)
            for block, pts in blocks.items():
                values = [v for _, v, _ in pts if v is not None]
                last = max(pts, key=lambda p: p[0])
                out[(key, width, block)] = (
                    min(p[0] for p in pts),
                    last[0],
                    min(values) if values else None,
                    max(values) if values else None,
                    len(pts),
                    last[1],
                    last[2],
                )
    return out


def _stored(engine: Engine, run_id: int) -> dict[tuple[str, int, int], tuple[Any, ...]]:
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT key, width, block, s0, s1, vmin, vmax, n, vlast, tlast FROM metric_rollup WHERE run_id = :r"
            ),
            {"r": run_id},
        )
        return {(r[0], r[1], r[2]): tuple(r[3:]) for r in rows}


def _assert_rollups_match(engine: Engine, run_id: int) -> None:
    expected = _recompute(_raw(engine, run_id))
    stored = _stored(engine, run_id)
    assert stored.keys() == expected.keys()
    for k, row in expected.items():
        assert stored[k] == row, k


def _value(rng: random.Random) -> float | None:
    if rng.random() < 0.03:
        return None  # a gap
    return rng.choice([rng.gauss(0.0, 1.0), rng.gauss(0.0, 1.0), 1e6 * rng.random()])


@pytest.mark.heavy
def test_rollups_equal_recomputation_after_random_batches_retries_and_resumes(api: Api) -> None:
    engine = get_engine(api.settings.database_url)
    run_id = api.submit({}).json()["runs"][0]["id"]
    rng = random.Random(12)
    keys = ["loss", "acc", "lr"]
    sent: list[list[Point]] = []
    step = 0
    for _ in range(25):
        # a training loop: every key at the same new steps, with random strides (sparse blocks too)
        steps = []
        for _ in range(rng.randint(1, 120)):
            step += rng.choice([1, 1, 1, 7, 130, 2500])
            steps.append(step)
        batch = [(k, s, _value(rng)) for s in steps for k in keys]
        _post(api, run_id, batch)
        sent.append(batch)
        if rng.random() < 0.3:  # a retried batch (the same points again)
            _post(api, run_id, rng.choice(sent))
    _assert_rollups_match(engine, run_id)
    # a resumed run: back to an earlier checkpoint step, the same steps again with new values, one key only
    resume_at = step // 3
    again = [("loss", s, _value(rng)) for s in range(resume_at, resume_at + 3000, 3)]
    for i in range(0, len(again), 400):
        _post(api, run_id, again[i : i + 400])
    # a batch overwriting scattered points of several keys, out of order, with a key of its own
    scattered = [(rng.choice(keys), rng.randint(0, step), _value(rng)) for _ in range(300)]
    _post(api, run_id, [*scattered, ("extra", 5, 1.0), ("extra", 50_001, 2.0)])
    _assert_rollups_match(engine, run_id)
    # and the same batch re-sent counts nothing twice (only the points' times, sent as "now", move)
    before = _stored(engine, run_id)
    _post(api, run_id, [*scattered, ("extra", 5, 1.0), ("extra", 50_001, 2.0)])
    after = _stored(engine, run_id)
    assert {k: v[:-1] for k, v in after.items()} == {k: v[:-1] for k, v in before.items()}
    _assert_rollups_match(engine, run_id)


def test_deleting_a_run_deletes_its_rollups(api: Api) -> None:
    engine = get_engine(api.settings.database_url)
    run_id = api.submit({}).json()["runs"][0]["id"]
    _post(api, run_id, [("x", s, float(s)) for s in range(0, 30_000, 7)])
    assert _stored(engine, run_id)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM runs WHERE id = :r"), {"r": run_id})
    assert _stored(engine, run_id) == {}


def _query(
    api: Api, run_id: int, key: str, max_points: int, lo: int | None = None, hi: int | None = None
) -> Any:
    params: dict[str, Any] = {"keys": key, "max_points": max_points, "with_time": "true"}
    if lo is not None:
        params["step_min"] = lo
    if hi is not None:
        params["step_max"] = hi
    r = api.client.get(f"/api/v1/runs/{run_id}/metrics", params=params, headers=api.h())
    assert r.status_code == 200, r.text
    return r.json()["series"][key]


@pytest.mark.heavy
def test_downsampled_query_over_rollups_keeps_shape_and_every_min_max(api: Api) -> None:
    engine = get_engine(api.settings.database_url)
    run_id = api.submit({}).json()["runs"][0]["id"]
    rng = random.Random(5)
    steps = sorted(rng.sample(range(120_000), 9000))
    values: dict[int, float | None] = {s: _value(rng) for s in steps}
    for spike in rng.sample(steps, 6):
        values[spike] = 1e9 if rng.random() < 0.5 else -1e9  # spikes both ways
    pts = [("loss", s, values[s]) for s in steps]
    for i in range(0, len(pts), 1000):
        _post(api, run_id, pts[i : i + 1000])
    raw = [(s, v) for s, v, _ in _raw(engine, run_id)["loss"]]
    windows: list[tuple[int | None, int | None]] = [(None, None), (0, 119_999), (13, 117_777), (1234, 56_789)]
    windows += [
        (lo, lo + span) for lo, span in ((rng.randrange(100_000), rng.choice([11, 999, 9_999, 33_333])),)
    ]
    windows += [(steps[0], steps[0]), (steps[-1] - 15, steps[-1])]
    for lo, hi in windows:
        for max_points in (7, 100, 1000):
            series = _query(api, run_id, "loss", max_points, lo, hi)
            assert set(series) == {"total_points", "step_min", "step_max", "buckets"}
            assert (series["total_points"], series["step_min"], series["step_max"]) == (
                len(raw),
                steps[0],
                steps[-1],
            )
            a = steps[0] if lo is None else max(lo, steps[0])
            b = steps[-1] if hi is None else min(hi, steps[-1])
            inside = [(s, v) for s, v in raw if a <= s <= b]
            buckets = series["buckets"]
            assert len(buckets) <= max_points
            assert sum(x["count"] for x in buckets) == len(inside)
            for prev, nxt in itertools.pairwise(buckets):
                assert prev["step_end"] < nxt["step_start"]
            for x in buckets:
                assert set(x) == {
                    *("step_start", "step_end", "min", "max", "last", "count", "time"),
                    *("nonfinite", "last_nonfinite"),  # NaN and inf: tests/backend/test_metric_nonfinite.py
                }
                assert (x["nonfinite"], x["last_nonfinite"]) == (0, None)  # gaps (None) are not NaN
                pts_in = [(s, v) for s, v in inside if x["step_start"] <= s <= x["step_end"]]
                finite = [v for _, v in pts_in if v is not None]
                assert x["count"] == len(pts_in) and pts_in[0][0] == x["step_start"]
                assert x["min"] == (min(finite) if finite else None)
                assert x["max"] == (max(finite) if finite else None)
                assert (pts_in[-1][0], x["last"]) == (x["step_end"], pts_in[-1][1])
                assert x["time"] is not None
            # no spike lost: the window's extremes are among the buckets'
            finite = [v for _, v in inside if v is not None]
            if finite:
                assert max(x["max"] for x in buckets if x["max"] is not None) == max(finite)
                assert min(x["min"] for x in buckets if x["min"] is not None) == min(finite)


def test_wide_buckets_sit_on_a_grid_of_rollup_blocks(api: Api) -> None:
    """A dense series: buckets are whole roll-up blocks (a multiple of the width, from a multiple of it),
    the window's ragged ends trimmed to the window."""
    run_id = api.submit({}).json()["runs"][0]["id"]
    _post(api, run_id, [("x", s, float(s % 97)) for s in range(10_000)])
    buckets = _query(api, run_id, "x", 100, 1234, 9876)["buckets"]
    # 8,643 steps in 100 buckets: 87 steps a bucket -> width 10 blocks, 90-step buckets from step 1230
    assert buckets[0]["step_start"] == 1234 and buckets[0]["step_end"] == 1319
    assert all((x["step_start"] - 1230) % 90 == 0 for x in buckets[1:])
    assert buckets[-1]["step_end"] == 9876 and len(buckets) == 97


def test_migration_fills_rollups_from_stored_points(api: Api) -> None:
    engine = get_engine(api.settings.database_url)
    run_id = api.submit({}).json()["runs"][0]["id"]
    rng = random.Random(3)
    _post(api, run_id, [(k, s, _value(rng)) for s in rng.sample(range(40_000), 2000) for k in ("a", "b")])
    config = alembic_config(api.settings.database_url)
    command.downgrade(config, "0003")
    command.upgrade(config, "head")
    _assert_rollups_match(engine, run_id)


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)  # SQLite serialises writers
def test_concurrent_writers_of_one_run_leave_exact_rollups(api: Api) -> None:
    """Postgres: batches into one run from several connections at once (overlapping blocks, some points
    written twice): the advisory lock orders the recomputations, the roll-ups still match the points."""
    engine = get_engine(api.settings.database_url)
    run_id = api.submit({}).json()["runs"][0]["id"]
    errors: list[BaseException] = []

    def writer(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(12):
                start = rng.randrange(0, 3000)
                _post(
                    api,
                    run_id,
                    [("loss", s, rng.random()) for s in range(start, start + rng.randint(1, 300))],
                )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    _assert_rollups_match(engine, run_id)


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)  # SQLite serialises writers
def test_appends_folded_by_two_writers_into_the_same_blocks_stay_exact(api: Api) -> None:
    """Postgres, the append path (roll-ups summarised from the batch and folded into the stored blocks):
    two transactions append interleaved steps of one key into the same blocks, both seeing no stored
    point of theirs. The second waits for the first's roll-up lock, then folds into its committed rows:
    the block's last step is the first writer's (a later step than any of the second's), and every
    count, min and max adds up."""
    engine = get_engine(api.settings.database_url)
    run_id = api.submit({}).json()["runs"][0]["id"]
    _post(api, run_id, [("loss", s, float(s)) for s in range(0, 95)])  # a partly filled block of 100
    factory = session_factory(engine)
    first, second = factory(), factory()

    def points(steps: range, value: float) -> dict[tuple[str, int], tuple[float | None, datetime]]:
        return {("loss", s): (value + s, datetime(2026, 1, 1, tzinfo=UTC)) for s in steps}

    a = points(range(100, 1200, 2), 1000.0)  # the later last step (1198), and the maximum
    b = points(range(101, 1101, 2), -1000.0)  # the minimum; its last step (1099) inside a's blocks
    metric_points.upsert_series(first, run_id, a, {"loss": 100})
    done = threading.Event()
    errors: list[BaseException] = []

    def second_writer() -> None:
        try:
            metric_points.upsert_series(second, run_id, b, {"loss": 101})  # waits for first's roll-up lock
            second.commit()
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=second_writer)
    thread.start()
    with engine.connect() as conn:  # the second writer's points are in; it waits for the roll-up lock
        waiting = (
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        while not done.is_set() and conn.execute(text(waiting)).scalar_one() == 0:
            done.wait(0.05)
    assert not done.is_set(), errors
    first.commit()
    thread.join()
    first.close()
    second.close()
    assert not errors
    _assert_rollups_match(engine, run_id)
    widest = _stored(engine, run_id)[("loss", ROLLUP_WIDTHS[-1], 0)]
    assert widest[:5] == (0, 1198, -1000.0 + 101, 1000.0 + 1198, 95 + 550 + 500)
