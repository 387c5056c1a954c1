"""The whole project's seed groups from stored summaries (backend/groups/summary.py, migration 0024) on SQLite
and Postgres: the answer must be the SQL path's answer (the same JSON), and a summary that is no longer
exact must not answer, whatever changed: runs ending after the build, a retried run, a deleted experiment,
a metric written to a finished run. Values are multiples of 1/8, so sums are exact in any order of addition
and the two paths' JSON can be compared whole."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, text, update

from backend.db import get_engine, session_factory, session_scope, utcnow
from backend.groups import service as groups
from backend.groups import summary
from backend.models import GroupSummary, Project, Run
from backend.query import RUNS
from backend.query import groups as query_groups
from backend.runs import repository
from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)

MARGIN = 60.0
COLUMNS = "metrics.acc,min(metrics.loss),max(metrics.loss),best(metrics.loss),best(metrics.score)"
SORTS = [
    ("created_at", True),
    ("created_at", False),
    ("n", True),
    ("default", False),
    ("default", True),
    ("metric-mean:metrics.acc", True),
    ("metric-mean:metrics.acc", False),
    ("metric-mean:best(metrics.score)", False),
]


def _post(api: Api, run_id: int, points: list[tuple[str, int, float | None]]) -> None:
    body = {"points": [{"key": k, "step": s, "value": v} for k, s, v in points]}
    res = api.client.post(f"/api/v1/runs/{run_id}/metrics", json=body, headers=api.h())
    assert res.status_code == 200, res.text


@pytest.fixture(autouse=True)
def _score_directions(monkeypatch: pytest.MonkeyPatch) -> None:
    """``score``: better low for diagnostic runs, high for carma runs (best reads vmin, vmax per kind)."""
    real = query_groups.directions

    def directions(key: str) -> tuple[list[str], list[str]]:
        return (["diagnostic"], ["carma"]) if key == "score" else real(key)

    monkeypatch.setattr(query_groups, "directions", directions)
    monkeypatch.setattr(summary, "directions", directions)


def _factory(api: Api) -> Any:
    return session_factory(get_engine(api.settings.database_url))


def _seed(api: Api) -> dict[str, Any]:
    """Seven configurations x three seeds (21 runs) in project default, metrics of every shape; then most
    runs ended an hour ago (covered by a build), some running, some ended a moment ago (not covered)."""
    res = api.submit({}, sweep={"grid": {"train.lr": [1, 2, 3, 4, 5, 6, 7]}, "seeds": [0, 1, 2]}, name="grid")
    assert res.status_code == 201, res.text
    ids = sorted(r["id"] for r in res.json()["runs"])
    for i, rid in enumerate(ids):
        if i == 17:
            continue  # stays queued, never started, no metric
        points: list[tuple[str, int, float | None]] = [
            ("loss", 0, 4 + i / 8),
            ("loss", 1, 1 + (i % 5) / 8),
            ("loss", 2, 2 + (i % 3) / 8),
            ("score", 0, i / 8),
            ("score", 1, (21 - i) / 4),
        ]
        if i % 4 != 3:  # every fourth run has no acc
            points.append(("acc", 5, (i % 7) / 8))
        if i == 5:
            points.append(("acc", 6, None))  # its last acc is NaN (sent as null): no value
        _post(api, rid, points)
    now = utcnow()
    running = ids[18:20]
    recent = [ids[20], ids[2]]
    with session_scope(_factory(api)) as session:
        session.execute(
            update(Run)
            .where(Run.id.in_(ids))
            .values(
                status="succeeded", started_at=now - timedelta(hours=2), finished_at=now - timedelta(hours=1)
            )
        )
        session.execute(update(Run).where(Run.id.in_(ids[6:9])).values(status="failed"))
        session.execute(update(Run).where(Run.id.in_(running)).values(status="running", finished_at=None))
        session.execute(update(Run).where(Run.id.in_(recent)).values(status="failed", finished_at=now))
        session.execute(update(Run).where(Run.id.in_(ids[::2])).values(kind="carma"))
        # queued: one never started (no metric), one given back by its worker (started, with metrics)
        session.execute(
            update(Run).where(Run.id == ids[17]).values(status="queued", started_at=None, finished_at=None)
        )
        session.execute(update(Run).where(Run.id == ids[16]).values(status="queued", finished_at=None))
        pid = session.scalars(select(Project.id).where(Project.name == "default")).one()
    return {"ids": ids, "running": running, "recent": recent, "pid": pid, "fresh": ids[17]}


def _sql(api: Api, pid: int, metrics: str, sort: str, desc: bool, offset: int, limit: int) -> Any:
    with session_scope(_factory(api)) as session:
        stmt = repository.filtered([pid], None, [], None, None)
        found, more = groups.page(session, stmt, "default", metrics, sort, desc, offset, limit)
        return [g.model_dump() for g in found], more


def _summary(api: Api, pid: int, metrics: str, sort: str, desc: bool, offset: int, limit: int) -> Any:
    with session_scope(_factory(api)) as session:
        stmt = repository.filtered([pid], None, [], None, None)
        columns = [query_groups.metric_column(RUNS, c, "x") for c in groups.split(metrics)]
        got = summary.answer(session, stmt, [pid], columns, sort, desc, offset, limit, api.settings)
        return None if got is None else ([g.model_dump() for g in got.groups], got.more)


def _build(api: Api, pid: int) -> None:
    assert summary.build(get_engine(api.settings.database_url), pid, MARGIN)


def _same(api: Api, pid: int) -> None:
    """Every sort, both orders, the whole list and pages of 3: the summary's answer is the SQL path's."""
    for sort, desc in SORTS:
        for offset, limit in [(0, 100), (0, 3), (3, 3), (6, 3)]:
            want = _sql(api, pid, COLUMNS, sort, desc, offset, limit)
            got = _summary(api, pid, COLUMNS, sort, desc, offset, limit)
            assert got == want, (sort, desc, offset, limit)


def test_summary_answers_as_the_sql_path(api: Api) -> None:
    s = _seed(api)
    pid = s["pid"]
    assert _summary(api, pid, COLUMNS, "created_at", True, 0, 100) is None  # no summary yet
    _build(api, pid)
    with session_scope(_factory(api)) as session:
        state = session.get(GroupSummary, pid)
        assert state is not None and state.built_generation == state.generation
        assert state.covered_runs == 21 - 6  # two running, two ended a moment ago, two queued
        assert state.fresh_clean  # the queued run that never started has no metric
    whole, more = _sql(api, pid, COLUMNS, "created_at", True, 0, 100)
    assert len(whole) == 7 and not more and sum(g["n"] for g in whole) == 21
    acc = [g["metrics"]["metrics.acc"] for g in whole]
    assert any(a["n"] < 3 for a in acc) and all(a["n"] >= 1 for a in acc)  # runs without acc, a NaN
    score = [g["metrics"]["best(metrics.score)"] for g in whole]
    assert sum(x["n"] for x in score) == 20  # both kinds (one reads vmin, the other vmax); one run has none
    _same(api, pid)
    # more groups than a page
    page, more = _summary(api, pid, COLUMNS, "created_at", True, 0, 3)
    assert len(page) == 3 and more


@pytest.mark.heavy
def test_changes_after_the_build(api: Api) -> None:
    s = _seed(api)
    pid, ids = s["pid"], s["ids"]
    _build(api, pid)
    _same(api, pid)
    now = utcnow()
    # a running run ends after the build (after its until): still exact, the open runs hold it
    with session_scope(_factory(api)) as session:
        session.execute(
            update(Run).where(Run.id == s["running"][0]).values(status="succeeded", finished_at=now)
        )
        session.execute(update(Run).where(Run.id == ids[1]).values(name="renamed"))  # not summed: no change
    assert _summary(api, pid, COLUMNS, "n", True, 0, 100) is not None
    _same(api, pid)
    # a metric written to a run that ended a moment ago (not covered): still exact
    _post(api, s["recent"][0], [("acc", 9, 7 / 8)])
    _same(api, pid)

    # a metric written to the queued run that never started (requests skip those runs' lookups)
    _post(api, s["fresh"], [("acc", 1, 5 / 8), ("score", 1, 3 / 8)])
    assert _summary(api, pid, COLUMNS, "created_at", True, 0, 100) is None
    _build(api, pid)
    with session_scope(_factory(api)) as session:
        assert not session.get(GroupSummary, pid).fresh_clean  # type: ignore[union-attr]
    _same(api, pid)

    # a metric written to a covered run (a notebook): not exact any more, until rebuilt
    _post(api, ids[0], [("acc", 9, 1 / 8)])
    assert _summary(api, pid, COLUMNS, "created_at", True, 0, 100) is None
    _build(api, pid)
    _same(api, pid)

    # a retried (reopened) covered run
    res = api.client.post(f"/api/v1/runs/{ids[7]}/retry", headers=api.h())
    assert res.status_code == 200, res.text
    assert _summary(api, pid, COLUMNS, "created_at", True, 0, 100) is None
    _build(api, pid)
    _same(api, pid)

    # a deleted experiment (its runs cascade): one more, in another experiment of the project first
    res = api.submit({"train": {"lr": 0.5}}, name="gone")
    assert res.status_code == 201, res.text
    gone = res.json()["runs"][0]["id"]
    _post(api, gone, [("acc", 1, 3 / 8)])
    with session_scope(_factory(api)) as session:
        old = now - timedelta(hours=1)
        session.execute(update(Run).where(Run.id == gone).values(status="succeeded", finished_at=old))
    assert _summary(api, pid, COLUMNS, "created_at", True, 0, 100) is None  # an ended run's finish time set
    _build(api, pid)
    assert _summary(api, pid, COLUMNS, "created_at", True, 0, 100) is not None
    with session_scope(_factory(api)) as session:
        experiment = session.get(Run, gone).experiment_id  # type: ignore[union-attr]
        session.execute(text("DELETE FROM experiments WHERE id = :e").bindparams(e=experiment))
    assert _summary(api, pid, COLUMNS, "created_at", True, 0, 100) is None
    _build(api, pid)
    _same(api, pid)

    # a covered run deleted alone, by SQL
    with session_scope(_factory(api)) as session:
        session.execute(text("DELETE FROM runs WHERE id = :r").bindparams(r=ids[3]))
    assert _summary(api, pid, COLUMNS, "created_at", True, 0, 100) is None
    _build(api, pid)
    _same(api, pid)

    if api.settings.database_url.startswith("postgresql"):  # every run at once (SQLite has no TRUNCATE)
        with session_scope(_factory(api)) as session:
            session.execute(text("TRUNCATE runs CASCADE"))
        assert _summary(api, pid, COLUMNS, "created_at", True, 0, 100) is None
        _build(api, pid)
        _same(api, pid)
        assert _sql(api, pid, COLUMNS, "n", True, 0, 100) == ([], False)


def test_route_builds_in_the_background_then_answers_from_it(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = _seed(api)
    pid = s["pid"]
    api.settings.group_summary_after_ms = 0  # any SQL answer queues the build
    api.settings.group_summary_margin_s = MARGIN
    answered: list[bool] = []
    real = summary.answer

    def spy(*args: Any, **kw: Any) -> Any:
        got = real(*args, **kw)
        answered.append(got is not None)
        return got

    monkeypatch.setattr(summary, "answer", spy)
    params: dict[str, Any] = {
        "project": "default",
        "group_by": "default",
        "metrics": COLUMNS,
        "limit": 3,
        "sort": "n",
    }
    first = api.client.get("/api/v1/runs", params=params, headers=api.h())
    assert first.status_code == 200, first.text
    assert summary.summarizer.idle(30)
    second = api.client.get("/api/v1/runs", params=params, headers=api.h())
    assert second.status_code == 200, second.text
    assert answered == [False, True]
    assert second.json() == first.json()
    # its next page through the cursor, and a filter (a kind) never reads the summary
    nxt = api.client.get(
        "/api/v1/runs", params={**params, "cursor": second.json()["next_cursor"]}, headers=api.h()
    )
    assert nxt.status_code == 200 and answered == [False, True, True]
    want, _ = _sql(api, pid, COLUMNS, "n", True, 3, 3)
    assert nxt.json()["groups"] == want
    assert (
        api.client.get("/api/v1/runs", params={**params, "kind": "carma"}, headers=api.h()).status_code == 200
    )
    assert answered == [False, True, True]
    # too many ended runs outside it: answers, and is rebuilt behind the answer
    api.settings.group_summary_max_open = 1
    before = len(summary.summarizer.built)
    assert api.client.get("/api/v1/runs", params=params, headers=api.h()).status_code == 200
    assert answered[-1] is True
    assert summary.summarizer.idle(30) and len(summary.summarizer.built) == before + 1


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_change_during_the_build_leaves_it_stale(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """Postgres builds from a snapshot while other transactions commit: a covered run reopened after the
    build read its sums must leave the summary unused (its generation moved on). (SQLite's build holds the
    write lock throughout: nothing commits meanwhile.)"""
    s = _seed(api)
    pid, covered = s["pid"], s["ids"][6]
    real = summary._sums
    engine = get_engine(api.settings.database_url)

    def sums_then_reopen(conn: Any, project_id: int, until: Any) -> Any:
        got = real(conn, project_id, until)
        with engine.begin() as other:  # another transaction, committed before the build writes
            other.execute(update(Run).where(Run.id == covered).values(status="queued", finished_at=None))
        return got

    monkeypatch.setattr(summary, "_sums", sums_then_reopen)
    _build(api, pid)
    assert _summary(api, pid, COLUMNS, "created_at", True, 0, 100) is None
    monkeypatch.setattr(summary, "_sums", real)
    _build(api, pid)
    _same(api, pid)
