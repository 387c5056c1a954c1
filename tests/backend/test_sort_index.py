"""An optional index for a page sorted by a params path (backend/query ``sort_index_sql``, Postgres): its
expressions are exactly the page's ORDER BY, so the planner reads the page in index order (with the app's
bound parameters), and the pages are the same with and without it."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Table, select, update

from backend.db import get_engine, session_factory, session_scope
from backend.models import Run
from backend.query import EXPERIMENTS, RUNS, QueryError, order, sort_index_name, sort_index_sql
from tests.backend.conftest import Api

# lr per run: numbers (one tie), a string, a JSON null and a missing key
LRS: list[Any] = [0.1, 0.01, "warmup", 0.3, None, 0.01, "missing"]


def _pages(api: Api, sort: str, direction: str) -> list[int]:
    out: list[int] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"project": "default", "sort": sort, "order": direction, "limit": 2}
        if cursor:
            params["cursor"] = cursor
        res = api.client.get("/api/v1/runs", params=params, headers=api.h())
        assert res.status_code == 200, res.text
        out += [r["id"] for r in res.json()["items"]]
        cursor = res.json()["next_cursor"]
        if not cursor:
            return out


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_params_sort_reads_its_index_and_answers_the_same(api: Api) -> None:
    exp = api.submit({}, sweep={"grid": {"seed": list(range(len(LRS)))}}).json()
    ids = [r["id"] for r in sorted(exp["runs"], key=lambda r: r["index"])]
    engine = get_engine(api.settings.database_url)
    with session_scope(session_factory(engine)) as session:
        project_id = session.get(Run, ids[0]).project_id  # type: ignore[union-attr]
        for run_id, lr in zip(ids, LRS, strict=True):
            spec = dict(session.get(Run, run_id).spec)  # type: ignore[union-attr]
            spec.pop("lr", None)
            if lr != "missing":
                spec["lr"] = lr
            session.execute(update(Run).where(Run.id == run_id).values(spec=spec))
    a, b, s, c, null, tie, missing = ids
    before = {d: _pages(api, "params.lr", d) for d in ("asc", "desc")}
    assert before["asc"] == [b, tie, a, c, s, null, missing]  # numbers, then strings, then the rest by id
    assert before["desc"] == [c, a, b, tie, s, null, missing]

    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        for desc in (False, True):
            conn.exec_driver_sql(sort_index_sql(RUNS, "params.lr", desc))
        conn.exec_driver_sql(sort_index_sql(EXPERIMENTS, "params.model.n_experts", True))
        names = {
            r[0]
            for r in conn.exec_driver_sql(
                "SELECT indexname FROM pg_indexes WHERE position('_sort_' in indexname) > 0"
            )
        }
    assert names == {
        sort_index_name(RUNS, "params.lr", False),
        sort_index_name(RUNS, "params.lr", True),
        sort_index_name(EXPERIMENTS, "params.model.n_experts", True),
    }
    assert sort_index_name(RUNS, "params.lr", True).startswith("ix_runs_sort_lr_")
    assert {d: _pages(api, "params.lr", d) for d in ("asc", "desc")} == before

    # the page's own statement, its path a bound parameter as the API sends it: with sorting priced out
    # (a handful of rows would rather be sorted), the planner walks the index of that direction
    for desc in (False, True):
        name = sort_index_name(RUNS, "params.lr", desc)
        stmt = (
            select(Run.id)
            .where(Run.project_id == project_id)
            .order_by(*order(RUNS, "params.lr", desc, "postgresql"))
        )
        compiled = stmt.limit(3).compile(dialect=engine.dialect)
        assert "'lr'" not in str(compiled)  # bound, not inlined
        with engine.connect() as conn:
            conn.exec_driver_sql("SET enable_sort = off")
            conn.exec_driver_sql("SET enable_seqscan = off")
            plan = "\n".join(r[0] for r in conn.exec_driver_sql("EXPLAIN " + str(compiled), compiled.params))
        assert name in plan and "Sort" not in plan, plan


def test_metric_sorts_have_their_index_already() -> None:
    with pytest.raises(QueryError, match="metric_latest"):
        sort_index_sql(RUNS, "max(metrics.acc)", True)
    with pytest.raises(QueryError):
        sort_index_sql(RUNS, "params.", True)


def test_index_names_hash_the_path() -> None:
    # paths the readable part merges get two names; every name is [a-z0-9_] within Postgres's 63
    a, b = sort_index_name(RUNS, "params.a_b", True), sort_index_name(RUNS, "params.a.b", True)
    assert a != b and a.startswith("ix_runs_sort_a_b_") and b.startswith("ix_runs_sort_a_b_")
    long = sort_index_name(EXPERIMENTS, "params." + ".".join(["segment"] * 30), False)
    assert len(long) <= 63 and long.endswith("_asc")
    assert sort_index_name(RUNS, "params.lr", True) != sort_index_name(EXPERIMENTS, "params.lr", True)
    with pytest.raises(QueryError):
        sort_index_name(RUNS, "name", True)


def test_the_ddl_leaves_the_orm_tables_alone() -> None:
    # an Index object would attach itself to Run's table: create_all and the migrations' comparison with
    # the ORM (tests/backend/test_migrations.py) would then see the optional index as part of the schema
    table = Run.__table__
    assert isinstance(table, Table)
    before = {ix.name for ix in table.indexes}
    sort_index_sql(RUNS, "params.lr", True)
    sort_index_sql(EXPERIMENTS, "params.k", False)
    assert {ix.name for ix in table.indexes} == before
