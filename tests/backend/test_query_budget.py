"""A request's database budget: every statement of a request's session runs under Postgres's
statement_timeout (a 503 saying the request was too costly, never a 500, and the next request is served),
and a query's cost is bounded before it runs (backend/query/cost.py: tests and lookups of other tables)."""

from __future__ import annotations

import threading

import psycopg
import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import OperationalError

from backend.db import get_engine, session_factory, session_scope
from backend.query import RUNS, QueryError, where
from backend.query.cost import MAX_LOOKUPS, MAX_TESTS
from tests.backend.conftest import Api


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_each_statement_of_a_request_has_a_timeout_and_the_loops_none(database_url: str) -> None:
    engine = get_engine(database_url)
    timed = session_factory(engine, 200)
    statements: list[str] = []
    listen = lambda *args: statements.append(args[2])  # noqa: E731 (before_cursor_execute's statement)
    event.listen(timed.kw["bind"], "before_cursor_execute", listen)
    with session_scope(timed) as session:
        assert session.execute(text("SHOW statement_timeout")).scalar() == "200ms"
        session.commit()  # a new transaction of the same session: limited again
        assert session.execute(text("SHOW statement_timeout")).scalar() == "200ms"
        with pytest.raises(OperationalError) as caught:
            session.execute(text("SELECT pg_sleep(5)"))
        assert isinstance(caught.value.orig, psycopg.errors.QueryCanceled)
    # set when the connection is made: no transaction sends a SET for it (a round trip each, before)
    assert statements == ["SHOW statement_timeout", "SHOW statement_timeout", "SELECT pg_sleep(5)"]
    # the background loops' sessions, on the engine itself, have no limit
    with session_scope(session_factory(engine)) as session:
        assert session.execute(text("SHOW statement_timeout")).scalar() == "0"


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_every_connection_has_jit_off_and_a_chart_read_sets_nothing_itself(api: Api) -> None:
    """JIT would compile a metric chart's bucket query (the planner guesses a row per point) for more than
    the query costs: the engine's connections have it off from the start, so a read needs no SET."""
    engine = api.client.app.state.session_factory.kw["bind"]  # the requests' engine (statement_timeout)
    for each in (engine, get_engine(api.settings.database_url)):  # and the background loops'
        with each.connect() as conn:
            assert conn.execute(text("SHOW jit")).scalar() == "off"
    run = api.submit({"train": {"lr": 0.5}}).json()["runs"][0]["id"]
    claimed = api.client.post(
        f"/api/v1/runs/{run}/claim", json={"attempt": 1, "worker": "w"}, headers=api.worker
    )
    assert claimed.status_code == 200, claimed.text
    points = [{"key": "loss", "step": s, "value": 1.0 / (s + 1)} for s in range(50)]
    assert (
        api.client.post(
            f"/api/v1/runs/{run}/metrics", json={"points": points}, headers=api.worker
        ).status_code
        == 200
    )
    statements: list[str] = []
    listen = lambda *args: statements.append(args[2])  # noqa: E731 (before_cursor_execute's statement)
    event.listen(engine, "before_cursor_execute", listen)
    try:
        res = api.client.get(
            f"/api/v1/runs/{run}/metrics", params={"keys": "loss", "max_points": 10}, headers=api.h()
        )
    finally:
        event.remove(engine, "before_cursor_execute", listen)
    assert res.status_code == 200 and res.json()["series"]["loss"]["total_points"] == 50
    assert statements and not [s for s in statements if "jit" in s.lower()]


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_request_past_its_statement_timeout_is_503_and_the_next_is_served(api: Api) -> None:
    """The list's statement waits on a lock another connection holds (what a costly query does to the
    clock, without depending on the machine's speed): cancelled at the timeout, a 503 that says so."""
    app = api.client.app
    app.state.session_factory = session_factory(get_engine(api.settings.database_url), 300)  # type: ignore[attr-defined]
    assert api.submit({"train": {"lr": 0.5}}).status_code == 201
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        with psycopg.connect(
            api.settings.database_url.replace("postgresql+psycopg://", "postgresql://")
        ) as conn:
            conn.execute("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")
            locked.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(30)
        res = api.client.get("/api/v1/runs", params={"q": "params.a = 1"}, headers=api.h())
        assert res.status_code == 503, res.text
        assert "statement timeout" in res.json()["detail"] and res.json()["code"] == "unavailable"
    finally:
        release.set()
        holder.join(30)
    res = api.client.get("/api/v1/runs", headers=api.h())
    assert res.status_code == 200 and len(res.json()["items"]) >= 1


def test_a_querys_lookups_and_tests_are_bounded_before_it_runs() -> None:
    within = " and ".join(f"metrics.m{i} > 0" for i in range(MAX_LOOKUPS))
    where(RUNS, within, "postgresql")
    over = within + " or tags = 'x'"
    with pytest.raises(QueryError) as caught:
        where(RUNS, over, "postgresql")
    assert caught.value.pos == over.index("tags") and f"more than {MAX_LOOKUPS}" in caught.value.message
    values = ", ".join(str(i) for i in range(MAX_TESTS))
    where(RUNS, f"params.a in ({values})", "sqlite")
    where(RUNS, f"id in ({values}, -1)", "sqlite")  # one SQL IN: one test
    with pytest.raises(QueryError) as caught:
        where(RUNS, f"params.a in ({values}, -1) and name = 'x'", "sqlite")
    assert caught.value.pos == 0 and f"more than {MAX_TESTS} tests" in caught.value.message


def test_a_too_costly_query_is_422_at_q_naming_the_limit(api: Api) -> None:
    """150 metric tests (3.1k characters, under the 4,000 limit) held Postgres for 13 s."""
    q = " and ".join(f"metrics.m{i} > 0" for i in range(150))
    for path in ("/api/v1/runs",):
        res = api.client.get(path, params={"q": q}, headers=api.h())
        assert res.status_code == 422
        [error] = res.json()["errors"]
        assert error["loc"] == ["query", "q"]
        assert error["msg"].startswith(f"position {q.index(f'metrics.m{MAX_LOOKUPS} ')}: too costly")
    res = api.client.get(
        "/api/v1/experiments", params={"q": " or ".join(["tags = 'x'"] * 17)}, headers=api.h()
    )
    assert res.status_code == 422 and "too costly" in res.json()["detail"]
