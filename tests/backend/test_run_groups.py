"""Seed groups: GET /runs?group_by=&metrics= on SQLite and Postgres, against statistics computed
here independently (``statistics``, hand-coded Student t quantiles), and runs.group_key (set at creation,
backfilled by migration 0018)."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, select, text

from backend.db import get_engine, session_factory, session_scope
from backend.groups.key import group_key, without_seed
from backend.groups.service import split
from backend.groups.stats import stats
from backend.models import Run
from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)

T975 = {
    4: 2.7764451051977987,
    2: 4.302652729749464,
    8: 2.306004135204166,
}  # t_{0.975, df}, from tables, not from scipy
SEEDS = [0, 1, 2, 3, 4]
ACC_A = [0.71, 0.74, 0.69, 0.73, 0.75]  # lr 0.1: every seed logs acc
ACC_B: list[float | None] = [0.52, 0.58, 0.55, None, None]  # lr 0.01: seed 3 logs NaN, seed 4 no acc
LOSS_A = [[2.0, 0.4, 0.5], [1.5, 0.3, 0.35], [1.8, 0.45, 0.6], [2.2, 0.5, 0.5], [1.9, 0.2, 0.25]]
LOSS_B = [[2.5, 1.0, 1.1], [2.4, 1.2, 1.3], [2.6, 0.9, 0.95], [2.3, 1.1, 1.0], [2.2, 1.05, 1.05]]


def _post(api: Api, run_id: int, points: list[tuple[str, int, float | None]]) -> None:
    body = {"points": [{"key": k, "step": s, "value": v} for k, s, v in points]}
    res = api.client.post(f"/api/v1/runs/{run_id}/metrics", json=body, headers=api.h())
    assert res.status_code == 200, res.text


def _seed(api: Api) -> dict[str, Any]:
    """Two variants (train.lr 0.1 / 0.01) x five seeds, a lone run (lr 0.5), and a run of another project
    with variant A's spec and metrics far off the mark: it must never be grouped in."""
    res = api.submit({}, sweep={"grid": {"train.lr": [0.1, 0.01]}, "seeds": SEEDS}, name="ab")
    assert res.status_code == 201, res.text
    runs = res.json()["runs"]
    by = {(r["params"]["train.lr"], r["params"]["seed"]): r["id"] for r in runs}
    a = [by[(0.1, s)] for s in SEEDS]
    b = [by[(0.01, s)] for s in SEEDS]
    for rid, acc, loss in zip(a, ACC_A, LOSS_A, strict=True):
        _post(api, rid, [("acc", 10, acc), *[("loss", i, v) for i, v in enumerate(loss)]])
    for rid, maybe, loss in zip(b, ACC_B, LOSS_B, strict=True):
        points: list[tuple[str, int, float | None]] = [("loss", i, v) for i, v in enumerate(loss)]
        if maybe is not None or rid == b[3]:
            points.append(("acc", 10, maybe))  # b[3]: NaN (stored as no value)
        _post(api, rid, points)
    lone = api.submit({"train": {"lr": 0.5}}, name="lone").json()["runs"][0]["id"]
    _post(api, lone, [("acc", 1, 0.8), ("loss", 1, 0.7)])
    token = api.user("stranger", "admin", project="elsewhere")
    res = api.submit({}, sweep={"grid": {"train.lr": [0.1]}, "seeds": [9]}, project="elsewhere", token=token)
    other = res.json()["runs"][0]["id"]
    _post(api, other, [("acc", 10, 0.01), ("loss", 1, 9.0)])
    return {"a": a, "b": b, "lone": lone, "other": other, "other_token": token}


def _groups(api: Api, token: str | None = None, status: int = 200, **params: Any) -> Any:
    res = api.client.get("/api/v1/runs", params={"limit": 100, **params}, headers=api.h(token))
    assert res.status_code == status, res.text
    body = res.json()
    if status == 200:
        assert body["items"] == []
    return body


def _close(got: float | None, want: float) -> None:
    assert got is not None and math.isclose(got, want, rel_tol=1e-9), (got, want)


def _check(got: dict[str, Any], values: list[float]) -> None:
    """A MetricStats against the values, computed here."""
    n = len(values)
    assert got["n"] == n
    mean = statistics.fmean(values)
    _close(got["mean"], mean)
    assert got["min"] == min(values) and got["max"] == max(values)
    if n < 2:
        assert got["std"] is None and got["ci_low"] is None and got["ci_high"] is None
        return
    std = statistics.stdev(values)
    half = T975[n - 1] * std / math.sqrt(n)
    _close(got["std"], std)
    _close(got["ci_low"], mean - half)
    _close(got["ci_high"], mean + half)


def test_default_groups_every_spec_field_but_seed(api: Api) -> None:
    s = _seed(api)
    body = _groups(
        api,
        project="default",
        group_by="default",
        metrics="metrics.acc,max(metrics.acc),best(metrics.loss),min(metrics.loss)",
        sort="created_at",
        order="asc",
    )
    groups = body["groups"]
    assert [g["run_ids"] for g in groups] == [sorted(s["a"]), sorted(s["b"]), [s["lone"]]]
    assert [g["n"] for g in groups] == [5, 5, 1]
    a, b, lone = groups
    with session_scope(session_factory(get_engine(api.settings.database_url))) as session:
        spec = session.get(Run, s["a"][2]).spec  # type: ignore[union-attr]
    assert "seed" in spec and a["key"] == without_seed(spec) and "seed" not in a["key"]
    assert a["key"]["train"]["lr"] == 0.1 and b["key"]["train"]["lr"] == 0.01
    assert set(a["metrics"]) == {"metrics.acc", "max(metrics.acc)", "best(metrics.loss)", "min(metrics.loss)"}
    _check(a["metrics"]["metrics.acc"], ACC_A)
    _check(a["metrics"]["max(metrics.acc)"], ACC_A)
    _check(a["metrics"]["best(metrics.loss)"], [min(x) for x in LOSS_A])  # diagnostic: *loss* is min
    _check(b["metrics"]["metrics.acc"], [0.52, 0.58, 0.55])  # NaN and missing: not in n
    _check(b["metrics"]["min(metrics.loss)"], [min(x) for x in LOSS_B])
    _check(lone["metrics"]["metrics.acc"], [0.8])  # a group of one: its value, n 1, no interval
    assert lone["n"] == 1 and lone["metrics"]["metrics.acc"]["mean"] == 0.8
    assert body["next_cursor"] is None


def test_group_by_explicit_fields(api: Api) -> None:
    s = _seed(api)
    body = _groups(
        api, project="default", group_by="params.train.lr", metrics="metrics.acc", sort="params.train.lr"
    )
    assert [g["key"] for g in body["groups"]] == [
        {"params.train.lr": 0.5},
        {"params.train.lr": 0.1},
        {"params.train.lr": 0.01},
    ]  # order desc by default
    _check(body["groups"][1]["metrics"]["metrics.acc"], ACC_A)
    # two fields: seed splits every group (the lone run has the spec's default seed, 0)
    body = _groups(api, project="default", group_by="params.train.lr, params.seed", sort="n")
    keys = [g["key"] for g in body["groups"]]
    assert len(keys) == 11 and {"params.train.lr": 0.5, "params.seed": 0} in keys
    assert {"params.train.lr": 0.01, "params.seed": 3} in keys and all(g["n"] == 1 for g in body["groups"])
    # a string and an object of the spec, as stored
    body = _groups(api, project="default", group_by="params.kind")
    assert [(g["key"], g["n"]) for g in body["groups"]] == [({"params.kind": "diagnostic"}, 11)]
    body = _groups(api, project="default", group_by="params.train", sort="n", order="asc")
    assert [g["n"] for g in body["groups"]] == [1, 5, 5]
    with session_scope(session_factory(get_engine(api.settings.database_url))) as session:
        train = session.get(Run, s["lone"]).spec["train"]  # type: ignore[union-attr]
    assert body["groups"][0]["key"] == {"params.train": train} and train["lr"] == 0.5
    # a path no spec has: one group, the value None
    body = _groups(api, project="default", group_by="params.nothing.here")
    assert [(g["key"], g["n"]) for g in body["groups"]] == [({"params.nothing.here": None}, 11)]
    # plain fields
    body = _groups(api, project="default", group_by="kind,status", metrics="metrics.acc")
    assert [(g["key"], g["n"]) for g in body["groups"]] == [({"kind": "diagnostic", "status": "queued"}, 11)]
    _check(body["groups"][0]["metrics"]["metrics.acc"], [*ACC_A, 0.52, 0.58, 0.55, 0.8])
    body = _groups(api, project="default", group_by="experiment", sort="experiment", order="asc")
    assert [g["n"] for g in body["groups"]] == [10, 1]
    assert body["groups"][1]["run_ids"] == [s["lone"]]


def test_filters_apply_and_visibility(api: Api) -> None:
    s = _seed(api)
    body = _groups(
        api,
        project="default",
        group_by="default",
        metrics="metrics.acc",
        q="params.seed < 3 and params.train.lr < 0.2",
    )
    assert [g["run_ids"] for g in body["groups"]] == [sorted(s["b"][:3]), sorted(s["a"][:3])]
    _check(body["groups"][1]["metrics"]["metrics.acc"], ACC_A[:3])
    body = _groups(api, group_by="default", metrics="metrics.acc", q="metrics.acc > 0.6")
    assert [g["run_ids"] for g in body["groups"]] == [[s["lone"]], sorted(s["a"])]  # admin: every project
    body = _groups(
        api,
        group_by="default",
        experiment_id=api.client.get(f"/api/v1/runs/{s['lone']}", headers=api.h()).json()["experiment_id"],
    )
    assert [g["run_ids"] for g in body["groups"]] == [[s["lone"]]]
    # a member of the default project: the other project's run (variant A's spec) is never grouped in
    member = api.user("member1", "member", project="default")
    body = _groups(api, token=member, group_by="default", metrics="metrics.acc")
    assert [g["n"] for g in body["groups"]] == [1, 5, 5]
    assert all(s["other"] not in g["run_ids"] for g in body["groups"])
    _check(body["groups"][2]["metrics"]["metrics.acc"], ACC_A)
    body = _groups(api, token=s["other_token"], group_by="default", metrics="metrics.acc")
    assert [(g["run_ids"], g["metrics"]["metrics.acc"]["mean"]) for g in body["groups"]] == [
        ([s["other"]], 0.01)
    ]
    assert s["a"][0] not in body["groups"][0]["run_ids"]


def test_sorted_and_paged(api: Api) -> None:
    s = _seed(api)

    def walk(**params: Any) -> list[list[int]]:
        out: list[list[int]] = []
        cursor = None
        while True:
            extra: dict[str, Any] = {"cursor": cursor} if cursor else {}
            body = _groups(api, project="default", group_by="default", limit=1, **params, **extra)
            assert len(body["groups"]) <= 1
            out += [g["run_ids"] for g in body["groups"]]
            cursor = body["next_cursor"]
            if not cursor:
                return out

    a, b, lone = sorted(s["a"]), sorted(s["b"]), [s["lone"]]
    assert walk(metrics="metrics.acc", sort="metric-mean:metrics.acc", order="desc") == [lone, a, b]
    assert walk(metrics="metrics.acc", sort="metric-mean:metrics.acc", order="asc") == [b, a, lone]
    # nulls last in both orders: no group has "zzz"; then by the first member
    assert walk(metrics="metrics.zzz", sort="metric-mean:metrics.zzz", order="desc") == [a, b, lone]
    assert walk(sort="n", order="asc") == [lone, a, b]
    by_first = sorted([a, b, lone], key=lambda ids: ids[0])  # created_at and id: by the first member
    assert walk(sort="created_at", order="desc") == by_first[::-1]
    assert walk(sort="id", order="asc") == by_first


def test_bad_group_fields_metrics_and_sorts_are_422(api: Api) -> None:
    _seed(api)
    for params, loc, words in (
        ({"group_by": "colour"}, "group_by", "unknown field 'colour'"),
        ({"group_by": "tags"}, "group_by", "tags cannot be grouped by"),
        ({"group_by": "default,kind"}, "group_by", "default"),
        ({"group_by": " , "}, "group_by", "needs a field"),
        ({"group_by": "kind", "metrics": "params.lr"}, "metrics", "params.lr is not a metric column"),
        ({"group_by": "kind", "metrics": "max(metrics.acc"}, "metrics", "position"),
        ({"group_by": "kind", "metrics": "best(metrics.zzz)"}, "metrics", "metric_directions"),
        ({"group_by": "kind", "sort": "name"}, "sort", "group field (kind)"),
        ({"group_by": "kind", "sort": "metric-mean:metrics.acc"}, "sort", "metric-mean:metrics.acc"),
        ({"metrics": "metrics.acc"}, "metrics", "needs group_by"),
    ):
        body = _groups(api, status=422, **params)
        error = body["errors"][0]
        assert error["loc"] == ["query", loc], (params, body)
        assert words in error["msg"], (params, error["msg"])


def test_more_members_than_listed(api: Api) -> None:
    res = api.submit({}, sweep={"seeds": list(range(103))}, name="many")
    assert res.status_code == 201, res.text
    ids = sorted(r["id"] for r in res.json()["runs"])
    body = _groups(api, group_by="default")
    assert [(g["n"], g["run_ids"]) for g in body["groups"]] == [(103, ids[:100])]


def test_members_are_the_same_with_a_query(api: Api) -> None:
    # with a q, Postgres lists a group's first 100 ids from the grouped query's own pass (array_agg in id
    # order), without one from a second query: the answers must not differ by that
    s = _seed(api)
    res = api.submit({}, sweep={"seeds": list(range(103))}, name="many")
    ids = sorted(r["id"] for r in res.json()["runs"])
    everything = "id > 0"
    for params in (
        {"group_by": "default", "metrics": "metrics.acc,max(metrics.loss)"},
        {"group_by": "params.train.lr,params.nothing", "metrics": "metrics.acc", "sort": "n"},
        {"group_by": "experiment", "sort": "experiment", "order": "asc"},
    ):
        plain = _groups(api, project="default", **params)["groups"]
        queried = _groups(api, project="default", q=everything, **params)["groups"]
        assert queried == plain and sum(g["n"] for g in plain) == 11 + 103
    many = _groups(api, project="default", q=f"experiment = {res.json()['id']}", group_by="default")
    assert [(g["n"], g["run_ids"]) for g in many["groups"]] == [(103, ids[:100])]
    body = _groups(api, project="default", q="params.train.lr = 0.1", group_by="default")
    assert [g["run_ids"] for g in body["groups"]] == [sorted(s["a"])]


def test_split_and_stats() -> None:
    assert split('max(metrics.a,b), metrics."x,y" ,params.z') == [
        "max(metrics.a,b)",
        'metrics."x,y"',
        "params.z",
    ]
    assert split(" , ") == []
    empty = stats(0, None, None, None, None)
    assert (empty.n, empty.mean, empty.std, empty.ci_low, empty.min) == (0, None, None, None, None)
    same = stats(3, 1.5, 0.75, 0.5, 0.5)
    assert same.std == 0.0 and same.ci_low == same.ci_high == 0.5


def test_group_key_is_set_at_creation_and_ignores_seed(api: Api) -> None:
    s = _seed(api)
    with session_scope(session_factory(get_engine(api.settings.database_url))) as session:
        rows = session.execute(
            select(Run.id, Run.spec, Run.group_key).where(Run.id.in_(s["a"] + s["b"]))
        ).all()
    assert all(key == group_key(spec) for _, spec, key in rows)
    assert len({key for rid, _, key in rows if rid in s["a"]}) == 1
    assert len({key for _, _, key in rows}) == 2
    assert group_key({"a": [{"seed": 1, "b": 2}], "seed": 3}) == group_key({"a": [{"b": 2}]})
    assert group_key({"a": [1, 2]}) != group_key({"a": [2, 1]})  # lists keep their order


def test_migration_backfills_group_key(database_url: str, home: Path) -> None:
    from alembic import command

    from backend.bootstrap import alembic_config

    config = alembic_config(database_url)
    command.upgrade(config, "head")
    command.downgrade(config, "0017")
    specs = {
        1: '{"kind": "diagnostic", "seed": 1, "train": {"lr": 0.1}}',
        2: '{"kind": "diagnostic", "seed": 2, "train": {"lr": 0.1}}',
        3: '{"kind": "diagnostic", "train": {"lr": 0.1, "seed": 5}, "seed": 2}',
        4: '{"kind": "diagnostic", "seed": 1, "train": {"lr": 0.01}}',
    }
    engine = get_engine(database_url)
    spec_sql = "CAST(:spec AS json)" if engine.dialect.name == "postgresql" else ":spec"
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
        for rid, spec in specs.items():
            conn.execute(
                text(
                    'INSERT INTO runs (id, experiment_id, project_id, kind, "index", spec, params, queue, status, '
                    "attempt, max_attempts, progress_done, progress_total, progress_message, cancel_requested, "
                    "dispatched, created_at, updated_at) VALUES (:id, 1, 1, 'diagnostic', :id, "
                    f"{spec_sql}, '{{}}', 'cpu', 'queued', 1, 3, 0, 0, '', false, false, CURRENT_TIMESTAMP, "
                    "CURRENT_TIMESTAMP)"
                ).bindparams(id=rid, spec=spec)
            )
    command.upgrade(config, "head")
    with engine.begin() as conn:
        keys: dict[int, str] = dict(
            conn.execute(text("SELECT id, group_key FROM runs ORDER BY id")).tuples().all()
        )
        indexes = {ix["name"] for ix in inspect(conn).get_indexes("runs")}
    assert keys == {rid: group_key(json.loads(spec)) for rid, spec in specs.items()}  # the app's hash
    assert keys[1] == keys[2] == keys[3] != keys[4]
    assert "ix_runs_project_group_key" in indexes
    command.downgrade(config, "0017")
    command.upgrade(config, "head")


def _sdk(api: Api) -> Any:
    """The SDK's client, its requests answered by the test's API."""
    import httpx

    from reasonlab_sdk.client import ReasonLabClient

    def forward(request: httpx.Request) -> httpx.Response:
        res = api.client.request(
            request.method, request.url.path, params=request.url.params, headers=dict(request.headers)
        )
        return httpx.Response(res.status_code, content=res.content, headers=res.headers)

    return ReasonLabClient("http://testserver", api.admin_token, transport=httpx.MockTransport(forward))


def test_sdk_and_cli_list_groups(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    import cli.client as cli_client
    from cli.main import main

    s = _seed(api)
    page = _sdk(api).list_runs(
        project="default", group_by=["params.train.lr"], metrics=["metrics.acc"], sort="params.train.lr"
    )
    assert page["items"] == [] and [g["n"] for g in (page["groups"] or [])] == [1, 5, 5]
    _check((page["groups"] or [])[1]["metrics"]["metrics.acc"], ACC_A)
    monkeypatch.setattr(cli_client, "_client", lambda *_: _sdk(api))
    where = "params.train.lr < 0.2"
    out = CliRunner().invoke(
        main,
        [
            *("runs", "list", "--project", "default", "--where", where, "--group-by", "default"),
            *("--metric", "metrics.acc", "--sort", "n"),
        ],
    )
    assert out.exit_code == 0, out.output
    header, *rows = out.output.splitlines()
    assert header.split()[:3] == ["group", "n", "metrics.acc"]
    mean_a = statistics.fmean(ACC_A)
    half_a = T975[4] * statistics.stdev(ACC_A) / math.sqrt(5)
    mean_b = statistics.fmean([0.52, 0.58, 0.55])
    half_b = T975[2] * statistics.stdev([0.52, 0.58, 0.55]) / math.sqrt(3)
    assert sorted(row.split() for row in rows) == sorted(
        [
            ["train.lr=0.1", "5", f"{mean_a:.4g}", "±", f"{half_a:.2g}", "(n=5)"],
            ["train.lr=0.01", "5", f"{mean_b:.4g}", "±", f"{half_b:.2g}", "(n=3)"],
        ]
    ), out.output
    # the lone run: its value alone, no interval
    out = CliRunner().invoke(
        main,
        ["runs", "list", "--where", f"id = {s['lone']}", "--group-by", "default", "--metric", "metrics.acc"],
    )
    assert out.exit_code == 0, out.output
    assert out.output.splitlines()[1].split()[-3:] == ["1", "0.8", "(n=1)"]
    out = CliRunner().invoke(main, ["runs", "list", "--metric", "metrics.acc"])
    assert out.exit_code != 0 and "--group-by" in out.output
    out = CliRunner().invoke(main, ["runs", "list", "--group-by", "colour"])
    assert out.exit_code != 0 and "colour" in out.output
