"""The query language (backend/query/): the parser's tree, precedence and error positions, and
GET /runs?q= / GET /experiments?q= over every operator and field type on SQLite and Postgres."""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import inspect, update

from backend.db import get_engine, session_factory, session_scope
from backend.models import Experiment, Run
from backend.query import RUNS, QueryError, directions, parse, parse_field, where
from backend.query.nodes import And, Compare, Contains, Exists, In, Not, Now, Or
from tests.backend.conftest import Api

# -- the parser -------------------------------------------------------------------------------------------


def test_every_operator_parses() -> None:
    for op in ("=", "!=", "<", "<=", ">", ">="):
        node = parse(f"params.a.b {op} 3")
        assert isinstance(node, Compare) and node.op == op and node.value == 3
        assert node.field.name == "params" and node.field.path == ("a", "b")
    assert parse('tags in ("a", "b")') == In(parse_field("tags"), ("a", "b"), False, 9)
    node = parse("status not in ('failed')")
    assert isinstance(node, In) and node.negated and node.values == ("failed",)
    assert isinstance(parse('name contains "x"'), Contains)
    assert parse("params.x exists") == Exists(parse_field("params.x"), False)
    assert parse("params.x missing") == Exists(parse_field("params.x"), True)


def test_precedence_not_and_or() -> None:
    node = parse("a = 1 or b = 2 and not c = 3")
    assert isinstance(node, Or) and isinstance(node.items[1], And)
    assert isinstance(node.items[1].items[1], Not)
    grouped = parse("(a = 1 or b = 2) and c = 3")
    assert isinstance(grouped, And) and isinstance(grouped.items[0], Or)
    assert isinstance(parse("not a = 1 and b = 2"), And)  # not binds tighter than and
    chain = parse("a = 1 and b = 2 and c = 3")
    assert isinstance(chain, And) and len(chain.items) == 3
    assert isinstance(parse("A = 1 AND b = 2 Or c = 3"), Or)  # keywords in any case


def test_literals() -> None:
    def value(text: str) -> Any:
        node = parse(f"x = {text}")
        assert isinstance(node, Compare)
        return node.value

    assert value("'single'") == "single" and value('"dou\\"ble"') == 'dou"ble'
    assert value('"\\u00e9\\n"') == "é\n"
    assert value("3") == 3 and value("-2.5") == -2.5 and value("1e-3") == 0.001
    assert value("true") is True and value("FALSE") is False
    assert value("2026-11-01") == date(2026, 11, 1)
    assert value("2026-11-01T10:00Z") == datetime(2026, 11, 1, 10, tzinfo=UTC)
    assert value("2026-11-01T12:00+02:00") == datetime(2026, 11, 1, 10, tzinfo=UTC)
    assert value("now") == Now()
    for text, delta in (("90s", 90), ("15m", 900), ("2h", 7200), ("3d", 3 * 86400), ("1w", 7 * 86400)):
        assert value(f"now - {text}") == Now(timedelta(seconds=delta))


def test_fields_metric_keys_and_aggregates() -> None:
    f = parse_field("metrics.eval/acc-top.1")
    assert f.name == "metrics" and f.path == ("eval/acc-top.1",) and f.aggregate is None
    assert parse_field('metrics."eval acc"').path == ("eval acc",)
    assert parse_field("best(metrics.val_loss)").aggregate == "best"
    assert parse_field("params.train.lr").path == ("train", "lr")


@pytest.mark.parametrize(
    ("text", "pos", "words"),
    [
        ("name >", 6, "expected a value (a string in quotes, a number"),
        ("status = 'failed' and name > and", 29, "after '>'"),
        ("params.lr ! 3", 10, "expected an operator"),
        ("(a = 1", 6, "')'"),
        ("a = 1 b = 2", 6, "expected and, or or the end of the query after '1'"),
        ("a = 1 and", 9, "expected a field"),
        ("a not 3", 6, "in (after not)"),
        ("foo(metrics.x) > 1", 0, "unknown function 'foo'"),
        ("min(params.x) > 1", 4, "min(...) takes a metric"),
        ("x = 2026-13-01", 4, "not a valid date"),
        ("x = 'a\\q'", 4, "a bad escape"),
        ("created > now - 2", 16, "a duration"),
        ("", 0, "an empty query"),
        ("name = 'x' $", 11, "found '$'"),
    ],
)
def test_syntax_errors_name_the_position(text: str, pos: int, words: str) -> None:
    with pytest.raises(QueryError) as info:
        parse(text)
    assert info.value.pos == pos, str(info.value)
    assert words in info.value.message
    assert str(info.value).startswith(f"position {pos}: ")


def test_unknown_fields_and_type_errors() -> None:
    for text, pos, words in (
        (
            "colour = 'red'",
            0,
            "unknown field 'colour' for runs; the fields are: id, name, kind, status, tags",
        ),
        ("name = 1", 7, "name is text; a number does not compare"),
        ("metrics.acc = 'x'", 14, "metrics.acc is a number"),
        ("status = 'done'", 9, "status is one of queued, running"),
        ("best(metrics.zzz) > 1", 0, "use min(metrics.zzz) or max(metrics.zzz)"),
        ("params.x > 2026-01-01", 11, "compares with strings, numbers and booleans"),
        ("params.x < true", 11, "booleans take = and != only"),
        ("tags > 'a'", 7, "tags takes =, !=, in"),
        ("metrics.acc contains 'a'", 0, "contains applies to text and tags"),
        ("id exists", 0, "id always exists"),
    ):
        with pytest.raises(QueryError) as info:
            where(RUNS, text, "sqlite")
        assert info.value.pos == pos, (text, str(info.value))
        assert words in info.value.message, (text, info.value.message)


# -- the API, on both databases ---------------------------------------------------------------------------

NOW = datetime.now(UTC)

# (name, spec extras, metrics [(key, step, value)], tags, created_at offset in days, status)
RUNS_DATA: list[
    tuple[str | None, dict[str, Any], list[tuple[str, int, float | None]], list[str], int, str]
] = [
    (
        "alpha",
        {"lr": 0.1, "opt": "adam", "flag": True, "nest": {"k": 4}},
        [("loss", 1, 2.0), ("loss", 2, 0.5), ("loss", 3, 1.0), ("eval/acc", 1, 0.7)],
        ["base", "seed0"],
        0,
        "succeeded",
    ),
    (
        "beta",
        {"lr": 0.01, "opt": "sgd", "flag": False, "nest": {"k": 2}},
        [("loss", 1, 3.0), ("loss", 2, 2.5), ("eval/acc", 1, 0.9)],
        ["base"],
        1,
        "failed",
    ),
    ("x'; drop table runs; --", {"lr": "high", "opt": "adamw"}, [("loss", 1, None)], [], 5, "queued"),
    (None, {"lr": 0.001, "nest": {"k": 4}}, [], ["seed0"], 10, "queued"),
]


def _seed(api: Api) -> tuple[list[int], int]:
    """Four runs in the default project (see RUNS_DATA) and one in another project; their ids."""
    exp = api.submit({}, sweep={"grid": {"train.lr": [0.1, 0.01, 0.001, 0.002]}}, name="grid one").json()
    ids = [r["id"] for r in sorted(exp["runs"], key=lambda r: r["index"])]
    other_token = api.user("stranger", "admin", project="elsewhere")
    other = api.submit({}, name="grid one", project="elsewhere", token=other_token).json()
    factory = session_factory(get_engine(api.settings.database_url))
    for run_id, (name, extra, points, tags, days, status) in zip(ids, RUNS_DATA, strict=True):
        with session_scope(factory) as session:
            spec = dict(session.get(Run, run_id).spec)  # type: ignore[union-attr]
            spec.update(extra)
            values: dict[str, Any] = {"spec": spec, "name": name, "status": status}
            values["created_at"] = NOW - timedelta(days=days, hours=1)
            if status in ("succeeded", "failed"):
                values["finished_at"] = NOW - timedelta(days=days)
            session.execute(update(Run).where(Run.id == run_id).values(**values))
        if points:
            body = {"points": [{"key": k, "step": s, "value": v} for k, s, v in points]}
            res = api.client.post(f"/api/v1/runs/{run_id}/metrics", json=body, headers=api.h())
            assert res.status_code == 200, res.text
        for tag in tags:
            assert api.client.put(f"/api/v1/runs/{run_id}/tags/{tag}", headers=api.h()).status_code == 200
    # the other project's run matches almost everything: it must never come back
    other_run = other["runs"][0]["id"]
    with session_scope(factory) as session:
        spec = dict(session.get(Run, other_run).spec)  # type: ignore[union-attr]
        spec.update({"lr": 0.1, "opt": "adam", "flag": True, "nest": {"k": 4}})
        session.execute(update(Run).where(Run.id == other_run).values(spec=spec, name="alpha"))
    body = {"points": [{"key": "loss", "step": 1, "value": 0.5}]}
    assert api.client.post(f"/api/v1/runs/{other_run}/metrics", json=body, headers=api.h()).status_code == 200
    return ids, other_run


def _q(api: Api, q: str, **params: Any) -> list[int]:
    res = api.client.get(
        "/api/v1/runs", params={"q": q, "project": "default", "limit": 100, **params}, headers=api.h()
    )
    assert res.status_code == 200, (q, res.text)
    return [r["id"] for r in res.json()["items"]]


@pytest.mark.dialect_matrix
def test_every_operator_over_every_field_type(api: Api) -> None:
    (a, b, x, n), _ = _seed(api)
    cases: dict[str, set[int]] = {
        # numbers (id), text (name), enum (status)
        f"id = {a}": {a},
        f"id != {a}": {b, x, n},
        f"id > {b}": {x, n},
        f"id >= {b}": {b, x, n},
        f"id < {b}": {a},
        f"id <= {b}": {a, b},
        f"id in ({a}, {n})": {a, n},
        f"id not in ({a}, {n})": {b, x},
        'name = "alpha"': {a},
        'name != "alpha"': {b, x},  # a run without a name never compares
        'not name = "alpha"': {b, x, n},
        'name contains "et"': {b},
        'name contains "ALPHA"': set(),  # case-sensitive on both databases
        'name in ("alpha", "beta")': {a, b},
        'name not in ("alpha")': {b, x},
        "name missing": {n},
        "name exists": {a, b, x},
        'name > "b"': {b, x},
        'status = "queued"': {x, n},
        'status in ("failed", "succeeded")': {a, b},
        # times
        "created > now - 2d": {a, b},
        "created < now - 2d": {x, n},
        f"created >= {(NOW - timedelta(days=7)).date().isoformat()}": {a, b, x},
        "finished exists": {a, b},
        "finished missing": {x, n},
        f"finished < {(NOW - timedelta(hours=12)).isoformat()}": {b},
        # tags
        'tags = "base"': {a, b},
        'tags contains "seed0"': {a, n},
        'tags != "base"': {x, n},
        'tags in ("seed0", "nothing")': {a, n},
        'tags not in ("base")': {x, n},
        "tags exists": {a, b, n},
        "tags missing": {x},
        # params: numbers, strings, booleans, nested, absent, another JSON type
        "params.lr = 0.1": {a},
        "params.lr > 0.005": {a, b},  # "high" is a string: never a number
        "params.lr <= 0.01": {b, n},
        'params.lr = "high"': {x},
        "params.lr != 0.1": {b, x, n},
        'params.opt = "adam"': {a},
        'params.opt contains "adam"': {a, x},
        'params.opt in ("sgd", "adamw")': {b, x},
        'params.opt not in ("sgd")': {a, x},
        "params.opt missing": {n},
        "params.flag = true": {a},
        "params.flag = false": {b},
        "params.flag != true": {b},
        "params.nest.k = 4": {a, n},
        "params.nest.k >= 3 and params.nest.k < 5": {a, n},
        "params.nest exists": {a, b, n},
        "params.train.lr = 0.1": {a},  # the sweep's own path
        # metrics: last, min, max, best (diagnostic declares *loss* as min), keys with / and quotes
        "metrics.loss = 1": {a},
        "metrics.loss > 0.9": {a, b},
        "last(metrics.loss) > 2": {b},
        "min(metrics.loss) < 1": {a},
        "max(metrics.loss) >= 3": {b},
        "best(metrics.loss) <= 0.5": {a},
        "metrics.loss exists": {a, b, x},  # x's only point is NaN: the series exists
        "min(metrics.loss) exists": {a, b},
        "metrics.loss missing": {n},
        "metrics.eval/acc > 0.8": {b},
        'metrics."eval/acc" >= 0.7': {a, b},
        "metrics.loss in (1, 2.5)": {a, b},
        "metrics.loss not in (1)": {b},
        # experiment, author, kind
        'experiment = "grid one"': {a, b, x, n},
        'experiment contains "grid"': {a, b, x, n},
        'author = "admin"': {a, b, x, n},
        'kind = "diagnostic"': {a, b, x, n},
        # precedence and parentheses
        'status = "queued" or status = "failed" and params.lr = 0.01': {x, n, b},
        '(status = "queued" or status = "failed") and params.lr = 0.01': {b},
        'not status = "queued" and not tags = "seed0"': {b},
    }
    for q, want in cases.items():
        assert set(_q(api, q)) == want, q


@pytest.mark.dialect_matrix
def test_attempt_counts_what_the_allowance_counts_and_released_apart(api: Api) -> None:
    """``attempt`` is the attempts counted against max_attempts (a failure, a lost
    worker, a retry), never the ones released at a worker's shutdown, which ``released`` counts: a run
    released three times (attempt number 4) is ``attempt = 1``; one that failed once and was retried is
    ``attempt = 2``. A team filtering for flaky runs asks ``attempt > 1``."""
    (a, b, x, n), _ = _seed(api)
    factory = session_factory(get_engine(api.settings.database_url))
    with session_scope(factory) as session:
        session.execute(update(Run).where(Run.id == a).values(attempt=4, released=3))  # three Ctrl-Cs
        session.execute(update(Run).where(Run.id == b).values(attempt=2))  # failed, retried
        session.execute(update(Run).where(Run.id == x).values(attempt=3, released=1))  # both
    cases = {
        "attempt = 1": {a, n},
        "attempt > 1": {b, x},
        "attempt = 2": {b, x},
        "attempt in (1, 3)": {a, n},
        "released > 0": {a, x},
        "released = 3": {a},
        "attempt = 1 and released = 0": {n},
        "not released = 0": {a, x},
    }
    for q, want in cases.items():
        assert set(_q(api, q)) == want, q
    assert _q(api, "id > 0", sort="attempt", order="desc") == [b, x, a, n]  # ties by id
    assert _q(api, "id > 0", sort="released", order="desc")[:2] == [a, x]
    with pytest.raises(QueryError) as info:
        where(RUNS, "attempt = 'x'", "sqlite")
    assert "attempt is a number" in info.value.message


@pytest.mark.dialect_matrix
def test_injection_is_a_plain_string(api: Api) -> None:
    (_, _, x, _), _ = _seed(api)
    assert _q(api, 'name = "x\'; drop table runs; --"') == [x]
    assert _q(api, "name = 'x\\'; drop table runs; --'") == [x]
    assert _q(api, 'name contains "%"') == [] and _q(api, 'name contains "_"') == []
    assert "runs" in inspect(get_engine(api.settings.database_url)).get_table_names()
    assert len(_q(api, "id > 0")) == 4


@pytest.mark.dialect_matrix
def test_visibility_is_never_widened(api: Api) -> None:
    (a, _, _, _), other = _seed(api)
    member = api.user("member1", "member", project="default")
    res = api.client.get("/api/v1/runs", params={"q": 'name = "alpha"'}, headers=api.h(member))
    assert [r["id"] for r in res.json()["items"]] == [a]
    assert other not in _q(api, "id > 0", sort="metrics.loss")
    res = api.client.get("/api/v1/runs", params={"q": f"id = {other}"}, headers=api.h(member))
    assert res.json()["items"] == []


@pytest.mark.dialect_matrix
def test_sort_by_any_field_nulls_last_and_paged(api: Api) -> None:
    (a, b, x, n), _ = _seed(api)

    def order(sort: str, direction: str, limit: int = 100) -> list[int]:
        out: list[int] = []
        cursor = None
        while True:
            params: dict[str, Any] = {"project": "default", "sort": sort, "order": direction, "limit": limit}
            if cursor:
                params["cursor"] = cursor
            res = api.client.get("/api/v1/runs", params=params, headers=api.h())
            assert res.status_code == 200, res.text
            out += [r["id"] for r in res.json()["items"]]
            cursor = res.json()["next_cursor"]
            if not cursor:
                return out

    assert order("name", "asc") == [a, b, x, n]
    assert order("name", "desc", limit=1) == [x, b, a, n]
    assert order("params.lr", "asc") == [n, b, a, x]  # numbers, then the string, then none
    assert order("params.lr", "desc") == [a, b, n, x]
    assert order("metrics.loss", "asc") == [a, b, x, n]  # x's latest is NaN: no value
    assert order("min(metrics.loss)", "asc", limit=2) == [a, b, x, n]
    assert order("max(metrics.loss)", "desc") == [b, a, x, n]
    assert order("best(metrics.loss)", "asc") == [a, b, x, n]
    assert order("status", "asc") == [b, x, n, a]
    assert order("metric:loss", "desc") == [b, a, x, n]  # the older spelling still works
    assert order("finished_at", "asc") == [b, a, x, n]
    res = api.client.get("/api/v1/runs", params={"sort": "tags"}, headers=api.h())
    assert res.status_code == 422 and res.json()["errors"][0]["loc"] == ["query", "sort"]


@pytest.mark.dialect_matrix
def test_bad_queries_are_422_with_the_position(api: Api) -> None:
    res = api.client.get("/api/v1/runs", params={"q": "status = 'failed' and name >"}, headers=api.h())
    assert res.status_code == 422
    err = res.json()["errors"][0]
    assert err["loc"] == ["query", "q"]
    assert err["msg"].startswith("position 28: expected a value (a string in quotes, a number")
    assert "after '>'" in err["msg"]
    res = api.client.get("/api/v1/runs", params={"q": "colour = 1"}, headers=api.h())
    assert res.status_code == 422 and "the fields are: id, name" in res.json()["errors"][0]["msg"]
    res = api.client.get("/api/v1/experiments", params={"q": "metrics.loss > 1"}, headers=api.h())
    assert res.status_code == 422 and "unknown field 'metrics.loss' for experiments" in res.json()["detail"]


# each of these answered 500: a lone surrogate (psycopg's UnicodeEncodeError), a NUL (Postgres takes
# none), a time whose whole day or UTC offset leaves Python's range (OverflowError), an integer wider than
# SQLite's 64 bits; (parameter, text, the position the 422 names)
UNTAKEABLE = [
    ("q", "name = '\\ud800'", 7),
    ("q", "metrics.'\\ud800' > 1", 8),
    ("q", "params.'\\ud800' = 1", 7),
    ("q", "name = 'a\\u0000b'", 7),
    ("sort", "metrics.'\\ud800'", 8),
    ("sort", "params.'\\udfff'", 7),
    ("q", "created > 9999-12-31", 10),
    ("q", "created = 9999-12-31", 10),
    ("q", "created > 0001-01-01T00:00+01:00", 10),
    ("q", "created > 9999-12-31T23:00-05:00", 10),
    ("q", "id = 99999999999999999999999", 5),
    ("q", "id in (1, 99999999999999999999999)", 10),
    ("q", "params.a = 1" + "0" * 400, 11),
]


@pytest.mark.dialect_matrix
def test_what_no_database_takes_is_422_with_the_position_never_500(api: Api) -> None:
    api.submit({"train": {"lr": 0.5}})
    for param, text, pos in UNTAKEABLE:
        for path in ("/api/v1/runs", "/api/v1/experiments"):
            if path.endswith("experiments") and "metrics." in text:
                continue  # a field experiments do not have: its own 422
            res = api.client.get(path, params={param: text}, headers=api.h())
            assert res.status_code == 422, (path, text, res.text)
            [error] = res.json()["errors"]
            assert error["loc"] == ["query", param]
            assert error["msg"].startswith(f"position {pos}: "), (text, error["msg"])
    res = api.client.get("/api/v1/runs", params={"group_by": "params.'\\ud800'"}, headers=api.h())
    assert res.status_code == 422 and res.json()["errors"][0]["loc"] == ["query", "group_by"]
    # what still works at the edges of the ranges: a UTF-16 pair is its character, the last whole day
    for text in ("name = '\\ud83d\\ude00'", "created < 9999-12-30", "id > -1e999"):
        assert api.client.get("/api/v1/runs", params={"q": text}, headers=api.h()).status_code == 200, text


def test_the_parser_joins_utf16_pairs_and_names_what_it_cannot_take() -> None:
    node = parse("name = '\\ud83d\\ude00'")
    assert isinstance(node, Compare) and node.value == "\U0001f600"
    for text, pos, words in [
        ("name = '\\udc00\\ud800'", 7, "lone UTF-16 surrogate"),  # the wrong order is no pair
        ("name = 'x\x00'", 9, "NUL character"),  # a caller's own text, not only an escape
        ("name = '\udfff'", 8, "lone UTF-16 surrogate"),
        ("created > 0001-01-01", 10, "out of range"),
        ("id = -99999999999999999999", 5, "out of range"),
    ]:
        with pytest.raises(QueryError) as caught:
            parse(text)
        assert caught.value.pos == pos and words in caught.value.message, text


@pytest.mark.dialect_matrix
def test_experiments_query_and_sort(api: Api) -> None:
    e1 = api.submit({"train": {"lr": 0.5}}, name="first").json()["id"]
    e2 = api.submit({"train": {"lr": 0.05}}, sweep={"seeds": [0, 1, 2]}, name="second").json()["id"]
    e3 = api.submit({}, name="third").json()["id"]
    assert api.client.put(f"/api/v1/experiments/{e2}/tags/keep", headers=api.h()).status_code == 200
    factory = session_factory(get_engine(api.settings.database_url))
    with session_scope(factory) as session:
        session.execute(
            update(Experiment).where(Experiment.id == e3).values(created_at=NOW - timedelta(days=30))
        )

    def q(query: str, **params: Any) -> list[int]:
        res = api.client.get("/api/v1/experiments", params={"q": query, **params}, headers=api.h())
        assert res.status_code == 200, res.text
        return [e["id"] for e in res.json()["items"]]

    assert q("params.train.lr >= 0.05") == [e2, e1]
    assert q('name contains "ir"') == [e3, e1]
    assert q('tags = "keep"') == [e2]
    assert q("runs > 1") == [e2]
    assert q("created > now - 1d") == [e2, e1]
    assert q('kind = "diagnostic" and author = "admin"', sort="name", order="asc") == [e1, e2, e3]
    # e3's stored spec has the default lr, 0.01
    assert q("id > 0", sort="params.train.lr", order="asc", limit=1) == [e3]
    res = api.client.get(
        "/api/v1/experiments", params={"sort": "params.train.lr", "order": "asc", "limit": 1}, headers=api.h()
    )
    second = api.client.get(
        "/api/v1/experiments",
        params={"sort": "params.train.lr", "order": "asc", "cursor": res.json()["next_cursor"]},
        headers=api.h(),
    )
    assert [e["id"] for e in second.json()["items"]] == [e2, e1]


@pytest.mark.dialect_matrix
def test_min_and_max_follow_overwrites(api: Api) -> None:
    """metric_latest.vmin / vmax (migration 0015) kept at ingest: appended batches, an overwrite that
    removes the minimum (a resumed run re-sending its steps), and NaN points ignored."""
    run = api.submit({}).json()["runs"][0]["id"]

    def send(points: list[tuple[int, float | None]]) -> None:
        body = {"points": [{"key": "loss", "step": s, "value": v} for s, v in points]}
        assert api.client.post(f"/api/v1/runs/{run}/metrics", json=body, headers=api.h()).status_code == 200

    def matches(q: str) -> bool:
        return run in _q(api, q)

    send([(1, 3.0), (2, 0.25), (3, 1.0)])
    assert matches("min(metrics.loss) = 0.25") and matches("max(metrics.loss) = 3")
    send([(20_000, None), (20_001, 5.0)])  # another coarse block, a NaN
    assert matches("max(metrics.loss) = 5") and matches("min(metrics.loss) = 0.25")
    assert not matches("metrics.loss exists and last(metrics.loss) < 5")
    send([(2, 2.0)])  # the minimum overwritten
    assert matches("min(metrics.loss) = 1") and not matches("min(metrics.loss) < 1")


@pytest.mark.dialect_matrix
def test_result_fields_a_kind_declares(api: Api) -> None:
    """results.<name>: diagnostic declares final_loss -> its `diagnostic` record's final_loss."""
    ids = [r["id"] for r in api.submit({}, sweep={"seeds": [0, 1, 2]}).json()["runs"]]
    for run_id, loss in zip(ids[:2], (0.25, 0.75), strict=True):
        body = {
            "kind": "diagnostic",
            "payload": {"final_loss": loss, "initial_loss": 1.0, "steps": 10, "parameters": 33},
        }
        res = api.client.post(f"/api/v1/runs/{run_id}/results", json=body, headers=api.worker)
        assert res.status_code == 201, res.text
    assert set(_q(api, "results.final_loss < 0.5")) == {ids[0]}
    assert set(_q(api, "results.final_loss != 0.25")) == {ids[1]}
    assert set(_q(api, "results.final_loss in (0.25, 0.75)")) == set(ids[:2])
    assert set(_q(api, "results.final_loss missing")) == {ids[2]}
    assert _q(api, "id > 0", sort="results.final_loss", order="desc") == [ids[1], ids[0], ids[2]]
    res = api.client.get("/api/v1/runs", params={"q": "results.nope > 1"}, headers=api.h())
    assert res.status_code == 422
    assert "no kind declares the result field 'nope'; declared: " in res.json()["errors"][0]["msg"]
    assert "results.final_loss" in res.json()["errors"][0]["msg"]


def test_manifests_check_their_query_declarations() -> None:
    from worker.specs.diagnostic.diagnostic import MANIFEST

    with pytest.raises(ValueError, match="is not min or max"):
        dataclasses.replace(MANIFEST, metric_directions={"*loss*": "down"})
    with pytest.raises(ValueError, match="result_fields entry 'x'"):
        dataclasses.replace(MANIFEST, result_fields={"x": "carma_eval.test_acc"})  # not its record
    with pytest.raises(ValueError, match="result_fields entry 'y'"):
        dataclasses.replace(MANIFEST, result_fields={"y": "diagnostic"})  # no path
    lower, upper = directions("val_loss")
    assert "diagnostic" in lower and "carma" in lower and upper == []
    assert "carma" in directions("test_acc")[1] and directions("test_acc")[0] == []


@pytest.mark.dialect_matrix
def test_metric_sorts_page_by_keyset_through_ties_and_missing_values(api: Api) -> None:
    ids = [r["id"] for r in api.submit({}, sweep={"seeds": [0, 1, 2, 3, 4, 5]}).json()["runs"]]
    losses: dict[int, float | None] = dict(zip(ids, (1.0, 0.5, 1.0, None, 0.5), strict=False))
    for run_id, value in losses.items():
        body = {"points": [{"key": "loss", "step": 1, "value": value}]}
        assert (
            api.client.post(f"/api/v1/runs/{run_id}/metrics", json=body, headers=api.h()).status_code == 200
        )
    valued = [i for i in ids if losses.get(i) is not None]
    missing = [i for i in ids if losses.get(i) is None]  # a NaN and a run without the series, by id

    def walk(sort: str, direction: str, limit: int) -> list[int]:
        out: list[int] = []
        params: dict[str, Any] = {"project": "default", "sort": sort, "order": direction, "limit": limit}
        while True:
            res = api.client.get("/api/v1/runs", params=params, headers=api.h())
            assert res.status_code == 200, res.text
            out += [r["id"] for r in res.json()["items"]]
            if not res.json()["next_cursor"]:
                return out
            params["cursor"] = res.json()["next_cursor"]

    def value(i: int) -> float:
        v = losses[i]
        assert v is not None
        return v

    want_asc = sorted(valued, key=lambda i: (value(i), i)) + missing
    want_desc = sorted(valued, key=lambda i: (-value(i), i)) + missing
    for limit in (1, 2, 3, 100):
        assert walk("metrics.loss", "asc", limit) == want_asc, limit
        assert walk("last(metrics.loss)", "desc", limit) == want_desc, limit
        assert walk("metric:loss", "desc", limit) == want_desc, limit
    for bad in ('{"mv":"x","id":1}', '{"mv":1.5}', '{"mid":-1}', '{"mv":1,"id":2,"x":3}'):
        import base64

        c = base64.urlsafe_b64encode(bad.encode()).decode().rstrip("=")
        res = api.client.get("/api/v1/runs", params={"sort": "metrics.loss", "cursor": c}, headers=api.h())
        assert res.status_code == 422 and res.json()["errors"][0]["loc"] == ["query", "cursor"], bad
