"""Indexes the API builds itself for a slow ``params.<path>`` sort or filter (backend/query/autoindex.py,
Postgres; nothing on SQLite): built in the background after the request, the same pages before and
after, recorded in ``auto_indexes``, at most ``auto_index_max`` (the least recently used dropped), built
once when two processes ask at the same time, and never DDL for a path outside ``[A-Za-z0-9_-]``."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event, select, text, update

from backend.db import get_engine, make_engine, session_factory, session_scope, utcnow
from backend.models import AutoIndex, Run
from backend.query import RUNS, filter_index_name, parse_field, sort_index_name, where
from backend.query.autoindex import AutoIndexer, Job, build, flush, indexer, paths_of, safe_path
from tests.backend.conftest import Api

HOSTILE = """params."x'; DROP TABLE runs; --\""""


def _pages(api: Api, **params: Any) -> list[int]:
    out: list[int] = []
    cursor = None
    while True:
        query: dict[str, Any] = {"project": "default", "limit": 2, **params}
        if cursor:
            query["cursor"] = cursor
        res = api.client.get("/api/v1/runs", params=query, headers=api.h())
        assert res.status_code == 200, res.text
        out += [r["id"] for r in res.json()["items"]]
        cursor = res.json()["next_cursor"]
        if not cursor:
            return out


def _seed(api: Api, lrs: list[Any]) -> list[int]:
    exp = api.submit({}, sweep={"grid": {"seed": list(range(len(lrs)))}}).json()
    ids = [r["id"] for r in sorted(exp["runs"], key=lambda r: r["index"])]
    with session_scope(session_factory(get_engine(api.settings.database_url))) as session:
        for run_id, lr in zip(ids, lrs, strict=True):
            spec = dict(session.get(Run, run_id).spec)  # type: ignore[union-attr]
            spec.update(lr=lr, opt={"wd": lr})
            session.execute(update(Run).where(Run.id == run_id).values(spec=spec))
    return ids


def _indexes(url: str) -> set[str]:
    with get_engine(url).connect() as conn:
        rows = conn.exec_driver_sql("SELECT indexname FROM pg_indexes WHERE indexname ~ '_(sort|filter)_'")
        return {r[0] for r in rows}


def _recorded(url: str) -> list[tuple[str, str, str, str]]:
    with get_engine(url).connect() as conn:
        rows = conn.execute(
            select(AutoIndex.entity, AutoIndex.path, AutoIndex.direction, AutoIndex.index_name).order_by(
                AutoIndex.id
            )
        )
        return [tuple(r) for r in rows]  # type: ignore[misc]


def _project(url: str) -> int:
    with get_engine(url).connect() as conn:
        return int(conn.execute(select(Run.project_id).limit(1)).scalar_one())


def _on_first_use(api: Api) -> None:
    """Every request counts as slow and the table as large (the test's few runs)."""
    api.settings.auto_index_after_ms = 0
    api.settings.auto_index_min_rows = 0


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_params_sort_builds_its_index_in_the_background_and_pages_stay_the_same(api: Api) -> None:
    _seed(api, [0.1, 0.01, "warmup", 0.3, None, 0.01, 0.2])
    url = api.settings.database_url
    before = _pages(api, sort="params.lr", order="desc")  # default thresholds: 150 ms, 20,000 rows
    assert indexer.idle(60)
    assert _indexes(url) == set() and _recorded(url) == []

    _on_first_use(api)
    assert _pages(api, sort="params.lr", order="desc") == before  # answered without the index
    assert indexer.idle(60)  # built outside the request; bounded wait
    name = sort_index_name(RUNS, "params.lr", True)
    assert _indexes(url) == {name}
    assert _recorded(url) == [("runs", "params.lr", "desc", name)]
    assert _pages(api, sort="params.lr", order="desc") == before
    assert indexer.idle(60)
    assert _recorded(url) == [("runs", "params.lr", "desc", name)]  # once

    # a filter on a path: its filter index, of the number (or of the string) the filter compares
    filtered = _pages(api, q="params.opt.wd > 0.05", sort="created_at")
    strings = _pages(api, q='params.lr = "warmup"', sort="created_at")
    assert indexer.idle(60)
    wd, warmup = filter_index_name(RUNS, "params.opt.wd", "num"), filter_index_name(RUNS, "params.lr", "str")
    assert _indexes(url) == {name, wd, warmup}
    assert _pages(api, q="params.opt.wd > 0.05", sort="created_at") == filtered
    assert _pages(api, q='params.lr = "warmup"', sort="created_at") == strings and len(strings) == 1
    # the filter's own statement reads it (sequential scans priced out: a few rows would rather be read)
    stmt = select(Run.id).where(
        Run.project_id == _project(url), where(RUNS, "params.opt.wd > 0.05", "postgresql")
    )
    compiled = stmt.compile(dialect=get_engine(url).dialect)
    with get_engine(url).connect() as conn:
        conn.exec_driver_sql("SET enable_seqscan = off")
        plan = "\n".join(r[0] for r in conn.exec_driver_sql("EXPLAIN " + str(compiled), compiled.params))
    assert wd in plan, plan
    # the experiments list too
    res = api.client.get(
        "/api/v1/experiments", params={"project": "default", "sort": "params.lr"}, headers=api.h()
    )
    assert res.status_code == 200, res.text
    assert indexer.idle(60)
    assert ("experiments", "params.lr", "desc") in [r[:3] for r in _recorded(url)]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_sqlite_builds_nothing(api: Api) -> None:
    _seed(api, [0.1, 0.2])
    _on_first_use(api)
    assert len(_pages(api, sort="params.lr", order="desc")) == 2
    assert indexer.idle(60)
    assert _recorded(api.settings.database_url) == []


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_the_cap_drops_the_least_recently_used(api: Api) -> None:
    _seed(api, [0.1, 0.2])
    url = api.settings.database_url
    engine = get_engine(url)
    mine = AutoIndexer()
    jobs = [Job(url, "runs", p, "asc") for p in ("params.lr", "params.opt.wd", "params.seed")]
    assert build(engine, jobs[0], 2, 0, mine) and build(engine, jobs[1], 2, 0, mine)
    # params.lr used after params.opt.wd was built: opt.wd is now the least recently used
    with engine.begin() as conn:
        flush(conn, {("runs", "params.lr", "asc"): utcnow() + timedelta(seconds=5)})
    assert build(engine, jobs[2], 2, 0, mine)
    names = [sort_index_name(RUNS, j.path, False) for j in jobs]
    assert _indexes(url) == {names[0], names[2]}
    assert [r[1] for r in _recorded(url)] == ["params.lr", "params.seed"]
    assert mine.built == jobs

    # last uses noted in memory by observed requests reach the table before the choice
    api.settings.auto_index_min_rows = 0
    api.settings.auto_index_max = 2
    mine.observe(api.settings, "postgresql", RUNS, "params.lr", False, None, 0.0)  # fast: noted only
    time.sleep(0.01)
    assert build(engine, Job(url, "runs", "params.opt.wd", "desc"), 2, 0, mine)
    assert _indexes(url) == {names[0], sort_index_name(RUNS, "params.opt.wd", True)}


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_two_processes_asking_at_once_build_it_once(api: Api) -> None:
    _seed(api, [0.1, 0.2])
    url = api.settings.database_url
    job = Job(url, "runs", "params.lr", "desc")
    engines = [make_engine(url), make_engine(url)]  # two pools: as two API processes
    start = threading.Barrier(2)
    results: list[bool] = []

    def run(i: int) -> None:
        start.wait()
        results.append(build(engines[i], job, 8, 0))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for e in engines:
        e.dispose()
    assert sorted(results) == [False, True]
    assert _recorded(url) == [("runs", "params.lr", "desc", sort_index_name(RUNS, "params.lr", True))]


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_hostile_path_is_refused_before_any_ddl(api: Api) -> None:
    _seed(api, [0.1, 0.2])
    url = api.settings.database_url
    assert safe_path(parse_field(HOSTILE)) is None
    assert paths_of(HOSTILE, True, f"{HOSTILE} = 1 and params.lr > 0") == [("params.lr", "num")]
    name = sort_index_name(RUNS, HOSTILE, True)
    assert name.startswith("ix_runs_sort_x_drop_table_runs_") and set(name) <= set(
        "abcdefghijklmnopqrstuvwxyz0123456789_"
    )
    engine = make_engine(url)
    statements: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    assert not build(engine, Job(url, "runs", HOSTILE, "desc"), 8, 0)
    assert not build(engine, Job(url, "runs", "params.a;b", "desc"), 8, 0)
    assert statements == []  # not even a connection's query: refused before
    engine.dispose()
    _on_first_use(api)
    res = api.client.get("/api/v1/runs", params={"project": "default", "sort": HOSTILE}, headers=api.h())
    assert res.status_code == 200, res.text
    assert indexer.idle(60)
    assert _recorded(url) == [] and _indexes(url) == set()
    with get_engine(url).connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM runs")).scalar() == 2


def test_the_paths_a_request_would_use() -> None:
    assert paths_of("params.lr", True, None) == [("params.lr", "desc")]
    got = paths_of("params.lr", False, 'params.model.n_experts >= 3 or not params.k in (1, "x", 2)')
    assert got == [
        ("params.lr", "asc"),
        ("params.model.n_experts", "num"),
        ("params.k", "num"),
        ("params.k", "str"),
    ]
    assert paths_of(None, True, "params.lr = 0.1 and params.lr < 1") == [("params.lr", "num")]
    # no index serves these: existence, !=, booleans, not in
    q = "params.a exists and params.b != 1 and params.c = true and params.d not in (1) and status = 'failed'"
    assert paths_of("max(metrics.acc)", True, q) == []
    assert paths_of("name", True, "params.(") == []  # a bad query is the route's 422, not a path
