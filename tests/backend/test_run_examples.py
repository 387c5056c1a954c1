"""Per-example tables: posting (batches, idempotent re-posts, the writing attempt,
limits), paging by idx, the tables list, diffs of two runs on the examples' keys (with the fields that
define a change and a tolerance for numbers), visibility."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from backend.auth.principal import Principal
from backend.db import get_engine, session_factory, session_scope
from backend.examples import service
from backend.http.limits import WORKER_WRITE_LIMIT, route_class
from backend.models import RunExample, RunExampleTable, User
from tests.backend.conftest import Api
from worker.specs.base import MAX_EXAMPLE_ROWS

# the subject is SQL (upserts, keyset pages, an anti-join): SQLite and Postgres
pytestmark = pytest.mark.dialect_matrix


def _run(api: Api, token: str | None = None, project: str = "default") -> int:
    r = api.submit({}, token=token, project=project)
    assert r.status_code == 201, r.text
    return int(r.json()["runs"][0]["id"])


def _claimed(api: Api) -> int:
    run_id = _run(api)
    r = api.client.post(
        f"/api/v1/runs/{run_id}/claim", json={"attempt": 1, "worker": "w"}, headers=api.worker
    )
    assert r.status_code == 200, r.text
    return run_id


def _rows(start: int, stop: int, **extra: Any) -> list[dict[str, Any]]:
    return [
        {"idx": i, "key": f"item-{i:04d}", "data": {"item": i, "reply": f"r{i}", **extra}}
        for i in range(start, stop)
    ]


def _post(api: Api, run_id: int, rows: list[dict[str, Any]], table: str = "gradings", **kw: Any) -> Any:
    body = {"table": table, "rows": rows, **kw}
    return api.client.post(
        f"/api/v1/runs/{run_id}/examples", json=body, headers=kw.pop("headers", api.worker)
    )


def _page(api: Api, run_id: int, token: str | None = None, **params: Any) -> Any:
    return api.client.get(f"/api/v1/runs/{run_id}/examples", params=params, headers=api.h(token))


def test_rows_are_posted_paged_by_idx_and_counted(api: Api) -> None:
    run_id = _claimed(api)
    r = _post(api, run_id, _rows(0, 250), attempt=1)
    assert r.status_code == 200, r.text
    assert r.json() == {"table": "gradings", "accepted": 250, "rows": 250}
    assert _post(api, run_id, _rows(250, 300), attempt=1).json()["rows"] == 300
    assert _post(api, run_id, _rows(0, 3), table="flips", attempt=1).json()["rows"] == 3

    tables = api.client.get(f"/api/v1/runs/{run_id}/example-tables", headers=api.h()).json()
    assert tables == [{"name": "flips", "rows": 3}, {"name": "gradings", "rows": 300}]

    seen: list[int] = []
    cursor: str | None = None
    pages = 0
    while True:
        params: dict[str, Any] = {"table": "gradings", "limit": 70}
        if cursor:
            params["cursor"] = cursor
        page = _page(api, run_id, **params).json()
        assert page["total"] == 300
        seen += [row["idx"] for row in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == list(range(300)) and pages == 5  # 70 * 4 + 20
    first = _page(api, run_id, table="gradings", limit=2).json()["items"]
    assert first == [
        {"idx": 0, "key": "item-0000", "data": {"item": 0, "reply": "r0"}},
        {"idx": 1, "key": "item-0001", "data": {"item": 1, "reply": "r1"}},
    ]
    # a table nobody posted is empty, not an error
    assert _page(api, run_id, table="nothing").json() == {
        "run_id": run_id,
        "table": "nothing",
        "total": 0,
        "items": [],
        "next_cursor": None,
    }


def test_a_reposted_batch_replaces_its_rows_and_never_duplicates(api: Api) -> None:
    run_id = _claimed(api)
    assert _post(api, run_id, _rows(0, 10), attempt=1).json()["rows"] == 10
    # the same batch again (a retried post), then part of it with new data (a resumed attempt)
    assert _post(api, run_id, _rows(0, 10), attempt=1).json()["rows"] == 10
    r = _post(api, run_id, _rows(5, 12, graded=True), attempt=1)
    assert r.json() == {"table": "gradings", "accepted": 7, "rows": 12}
    items = _page(api, run_id, table="gradings").json()["items"]
    assert [row["idx"] for row in items] == list(range(12))
    assert items[4]["data"] == {"item": 4, "reply": "r4"}
    assert items[5]["data"] == {"item": 5, "reply": "r5", "graded": True}


def test_only_the_runs_current_attempt_writes(api: Api) -> None:
    run_id = _claimed(api)
    assert _post(api, run_id, _rows(0, 1), attempt=1).status_code == 200
    stale = _post(api, run_id, _rows(1, 2), attempt=2)
    assert stale.status_code == 409 and "attempt 2 no longer owns" in stale.json()["detail"]
    finish = {"attempt": 1, "status": "succeeded"}
    assert (
        api.client.post(f"/api/v1/runs/{run_id}/finish", json=finish, headers=api.worker).status_code == 200
    )
    # the run token of the finished attempt, with or without naming its attempt
    assert _post(api, run_id, _rows(1, 2), attempt=1).status_code == 409
    assert _post(api, run_id, _rows(1, 2)).status_code == 409
    assert _page(api, run_id, table="gradings").json()["total"] == 1
    # a run token reaches its own run only
    other = _run(api)
    claim = api.client.post(
        f"/api/v1/runs/{other}/claim", json={"attempt": 1, "worker": "w"}, headers=api.worker_token
    )
    other_token = {"Authorization": f"Bearer {claim.json()['run_token']}"}
    assert _post(api, other, _rows(0, 1), attempt=1, headers=other_token).status_code == 200
    assert _post(api, run_id, _rows(5, 6), headers=other_token).status_code == 403


def _resumed(api: Api, run_id: int, attempt: int) -> None:
    """Give the run back as ``attempt`` (a worker's shutdown) and claim it again as ``attempt + 1``."""
    url = f"/api/v1/runs/{run_id}"
    r = api.client.post(f"{url}/release", json={"attempt": attempt}, headers=api.worker)
    assert r.status_code == 200, r.text
    r = api.client.post(f"{url}/claim", json={"attempt": attempt + 1, "worker": "w2"}, headers=api.worker)
    assert r.status_code == 200, r.text


def _all(api: Api, run_id: int, table: str = "gradings") -> list[tuple[int, str, dict[str, Any]]]:
    page = _page(api, run_id, table=table, limit=1000).json()
    assert page["next_cursor"] is None
    assert page["total"] == len(page["items"])  # the kept count is the rows held
    return [(row["idx"], row["key"], row["data"]) for row in page["items"]]


def test_a_resumed_attempt_replaces_the_earlier_attempts_rows_in_any_order(api: Api) -> None:
    run_id = _claimed(api)
    assert _post(api, run_id, _rows(0, 6), attempt=1).status_code == 200
    assert _post(api, run_id, _rows(0, 2), table="flips", attempt=1).status_code == 200
    _resumed(api, run_id, 1)
    # attempt 2 logs the same examples in reverse order: every key at another idx than attempt 1 gave it
    backwards = [{"idx": i, "key": f"item-{5 - i:04d}", "data": {"item": 5 - i, "by": 2}} for i in range(4)]
    r = _post(api, run_id, backwards, attempt=2)
    assert r.status_code == 200, r.text
    assert r.json() == {"table": "gradings", "accepted": 4, "rows": 4}  # attempt 1's six rows are gone
    assert _all(api, run_id) == [(i, f"item-{5 - i:04d}", {"item": 5 - i, "by": 2}) for i in range(4)]
    # its next batch adds to its own rows; re-sent, it overwrites by idx; its keys stay unique
    more = [{"idx": i, "key": f"item-{5 - i:04d}", "data": {"item": 5 - i, "by": 2}} for i in (4, 5)]
    assert _post(api, run_id, more, attempt=2).json()["rows"] == 6
    assert _post(api, run_id, more, attempt=2).json()["rows"] == 6
    taken = [{"idx": 6, "key": "item-0005", "data": {}}]
    r = _post(api, run_id, taken, attempt=2)
    assert r.status_code == 422 and "already row 0" in r.json()["detail"]
    assert [key for _, key, _ in _all(api, run_id)] == [f"item-{5 - i:04d}" for i in range(6)]
    # a table the new attempt has not posted to yet keeps the earlier attempt's rows until it does
    assert [key for _, key, _ in _all(api, run_id, "flips")] == ["item-0000", "item-0001"]
    tables = api.client.get(f"/api/v1/runs/{run_id}/example-tables", headers=api.h()).json()
    assert tables == [{"name": "flips", "rows": 2}, {"name": "gradings", "rows": 6}]


def test_the_old_attempt_posting_after_the_new_one_took_over_is_refused_and_loses_nothing(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = _claimed(api)
    assert _post(api, run_id, _rows(0, 3), attempt=1).status_code == 200
    _resumed(api, run_id, 1)
    mine = [{"idx": 0, "key": "item-0002", "data": {"by": 2}}]
    assert _post(api, run_id, mine, attempt=2).status_code == 200
    # attempt 1, late: refused by the run's owner check
    late = _post(api, run_id, _rows(0, 3, late=True), attempt=1)
    assert late.status_code == 409 and "attempt 1 no longer owns" in late.json()["detail"]
    # and by the table's writer if it passed that check just before the run was handed on (a race)
    monkeypatch.setattr(service.runs, "check_writer", lambda run, attempt: None)
    raced = _post(api, run_id, _rows(0, 3, late=True), attempt=1)
    assert raced.status_code == 409 and "attempt 2 wrote table 'gradings'" in raced.json()["detail"]
    assert _all(api, run_id) == [(0, "item-0002", {"by": 2})]
    with session_scope(session_factory(get_engine(api.settings.database_url))) as s:
        stored = s.execute(
            select(RunExampleTable.attempt, RunExampleTable.rows).where(RunExampleTable.run_id == run_id)
        ).all()
    assert [tuple(row) for row in stored] == [(2, 1)]


def test_limits_and_bad_rows_name_the_field(api: Api) -> None:
    run_id = _claimed(api)
    assert route_class(f"/api/v1/runs/{run_id}/examples").limit == WORKER_WRITE_LIMIT
    too_many = _post(api, run_id, _rows(0, service.MAX_BATCH + 1), attempt=1)
    assert too_many.status_code == 413 and "at most 1000 rows" in too_many.json()["detail"]

    big = [{"idx": 0, "key": "big", "data": {"reply": "x" * (service.MAX_ROW_BYTES + 1)}}]
    r = _post(api, run_id, big, attempt=1)
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"] == ["body", "rows", 0, "data"]

    twice = [{"idx": 0, "key": "a", "data": {}}, {"idx": 1, "key": "a", "data": {}}]
    r = _post(api, run_id, twice, attempt=1)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "rows", 1, "key"]
    same_idx = [{"idx": 3, "key": "a", "data": {}}, {"idx": 3, "key": "b", "data": {}}]
    r = _post(api, run_id, same_idx, attempt=1)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "rows", 1, "idx"]

    assert _post(api, run_id, _rows(0, 2), attempt=1).status_code == 200
    # item-0000 is row 0: another row may not take its key (a diff matches rows on keys)
    taken = [{"idx": 7, "key": "item-0001", "data": {}}]
    r = _post(api, run_id, taken, attempt=1)
    assert r.status_code == 422
    assert (
        r.json()["errors"][0]["loc"] == ["body", "rows", 0, "key"] and "already row 1" in r.json()["detail"]
    )

    r = _post(api, run_id, _rows(0, 1), table="bad name!", attempt=1)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "table"]
    r = _post(api, run_id, [{"idx": -1, "key": "k", "data": {}}], attempt=1)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "rows", 0, "idx"]
    # a table holds at most MAX_EXAMPLE_ROWS rows: idx 0 to MAX_EXAMPLE_ROWS - 1, the last one accepted
    last = [{"idx": MAX_EXAMPLE_ROWS - 1, "key": "last", "data": {}}]
    assert _post(api, run_id, last, table="capped", attempt=1).json()["accepted"] == 1
    past = [{"idx": MAX_EXAMPLE_ROWS, "key": "past", "data": {}}]
    r = _post(api, run_id, past, table="capped", attempt=1)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "rows", 0, "idx"]
    assert _page(api, run_id, table="capped").json()["total"] == 1
    r = _page(api, run_id, table="gradings", cursor="not-a-cursor")
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["query", "cursor"]
    r = _page(api, run_id, table="gradings", limit=service.MAX_PAGE + 1)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["query", "limit"]
    assert _page(api, run_id, table="gradings").json()["total"] == 2  # nothing refused was written


def _diff_all(
    api: Api, run_id: int, other: int, limit: int, token: str | None = None
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(100):
        params: dict[str, Any] = {"other": other, "table": "gradings", "limit": limit}
        if cursor:
            params["cursor"] = cursor
        r = api.client.get(f"/api/v1/runs/{run_id}/examples/diff", params=params, headers=api.h(token))
        assert r.status_code == 200, r.text
        page = r.json()
        assert len(page["items"]) <= limit
        items += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return items
    raise AssertionError("the diff's cursor never ended")


@pytest.mark.parametrize("budget", [20_000, 3])
def test_a_diff_lists_changed_and_one_sided_keys_with_both_sides(
    api: Api, budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "DIFF_BUDGET", budget)
    a, b = _claimed(api), _claimed(api)
    mine = _rows(0, 20)
    theirs = [dict(r) for r in _rows(2, 22)]  # item 0, 1 only in a; item 20, 21 only in b
    for row in theirs:
        if row["idx"] in (5, 13):
            row["data"] = {**row["data"], "reply": "changed"}
        if row["idx"] == 9:  # the same JSON in another key order (other text): not a change
            row["data"] = dict(reversed(list(row["data"].items())))
    # b holds the same keys at other places: rows are matched on keys, never on idx
    theirs = [{**row, "idx": 100 - row["idx"]} for row in theirs]
    assert _post(api, a, mine, attempt=1).status_code == 200
    assert _post(api, b, theirs, attempt=1).status_code == 200

    for limit in (1, 2, 50):
        items = _diff_all(api, a, b, limit)
        summary = [(d["key"], d["change"]) for d in items]
        assert summary == [
            ("item-0000", "only_run"),
            ("item-0001", "only_run"),
            ("item-0005", "changed"),
            ("item-0013", "changed"),
            ("item-0020", "only_other"),
            ("item-0021", "only_other"),
        ], limit
    changed = next(d for d in items if d["key"] == "item-0005")
    assert changed["run"] == {"idx": 5, "key": "item-0005", "data": {"item": 5, "reply": "r5"}}
    assert changed["other"] == {"idx": 95, "key": "item-0005", "data": {"item": 5, "reply": "changed"}}
    assert items[0]["other"] is None and items[-1]["run"] is None
    # the other way round, the sides swap
    reverse = _diff_all(api, b, a, 50)
    assert [(d["key"], d["change"]) for d in reverse][:2] == [
        ("item-0005", "changed"),
        ("item-0013", "changed"),
    ]
    assert {d["change"] for d in reverse[2:]} == {"only_run", "only_other"}
    # a run against itself: nothing differs
    assert _diff_all(api, a, a, 10) == []


def test_a_diff_page_stops_at_its_budget_and_goes_on(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service, "DIFF_BUDGET", 8)
    a, b = _claimed(api), _claimed(api)
    assert _post(api, a, _rows(0, 30), attempt=1).status_code == 200
    changed = _rows(0, 30)
    changed[25]["data"] = {"item": 25, "reply": "new"}
    assert _post(api, b, changed, attempt=1).status_code == 200
    first = api.client.get(
        f"/api/v1/runs/{a}/examples/diff", params={"other": b, "table": "gradings"}, headers=api.h()
    ).json()
    assert first["items"] == [] and first["scanned"] == 8 and first["next_cursor"]
    assert [d["key"] for d in _diff_all(api, a, b, 5)] == ["item-0025"]


def test_peers_are_the_experiments_other_runs_holding_the_table(api: Api) -> None:
    r = api.submit({}, sweep={"grid": {"seed": [1, 2, 3, 4]}})
    assert r.status_code == 201, r.text
    ids = [run["id"] for run in r.json()["runs"]]
    for run_id in ids[:3]:
        claim = {"attempt": 1, "worker": "w"}
        assert api.client.post(f"/api/v1/runs/{run_id}/claim", json=claim, headers=api.worker).is_success
    assert _post(api, ids[0], _rows(0, 3), attempt=1).status_code == 200
    assert _post(api, ids[1], _rows(0, 1), table="flips", attempt=1).status_code == 200  # another table
    assert _post(api, ids[2], _rows(0, 5), attempt=1).status_code == 200
    assert api.client.patch(f"/api/v1/runs/{ids[2]}", json={"name": "lr 0.1"}, headers=api.h()).is_success
    assert _post(api, ids[3], _rows(0, 2), headers=api.h()).status_code == 200  # a member, run queued
    elsewhere = _claimed(api)  # another experiment's run with the table is no peer
    assert _post(api, elsewhere, _rows(0, 2), attempt=1).status_code == 200

    def peers(run_id: int, token: str | None = None, **params: Any) -> Any:
        return api.client.get(
            f"/api/v1/runs/{run_id}/examples/peers",
            params={"table": "gradings", **params},
            headers=api.h(token),
        )

    assert peers(ids[0]).json() == [
        {"id": ids[2], "index": 2, "name": "lr 0.1", "status": "running", "rows": 5},
        {"id": ids[3], "index": 3, "name": None, "status": "queued", "rows": 2},
    ]
    assert [p["id"] for p in peers(ids[3]).json()] == [ids[0], ids[2]]  # never the run itself
    assert [p["id"] for p in peers(ids[1]).json()] == [ids[0], ids[2], ids[3]]  # a run without the table
    assert [p["id"] for p in peers(ids[0], limit=1).json()] == [ids[2]]
    assert peers(ids[0], table="flips").json()[0]["id"] == ids[1]
    assert peers(ids[0], table="nothing").json() == []
    viewer = api.user("vic", role="viewer")
    outsider = api.user("ozzie", project="elsewhere")
    assert len(peers(ids[0], viewer).json()) == 2
    assert peers(ids[0], outsider).status_code == 404
    bad = peers(ids[0], table="bad name!")
    assert bad.status_code == 422 and bad.json()["errors"][0]["loc"] == ["query", "table"]
    bad = peers(ids[0], limit=service.MAX_PEERS + 1)
    assert bad.status_code == 422 and bad.json()["errors"][0]["loc"] == ["query", "limit"]


def test_examples_are_read_as_the_run_is_visible(api: Api) -> None:
    run_id = _claimed(api)
    assert _post(api, run_id, _rows(0, 3), attempt=1).status_code == 200
    viewer = api.user("vic", role="viewer")
    outsider = api.user("ozzie", project="elsewhere")
    assert _page(api, run_id, viewer, table="gradings").json()["total"] == 3
    assert _page(api, run_id, outsider, table="gradings").status_code == 404
    assert api.client.get(f"/api/v1/runs/{run_id}/example-tables", headers=api.h(outsider)).status_code == 404
    # a viewer may not write, an outsider does not see the run
    assert _post(api, run_id, _rows(3, 4), headers=api.h(viewer)).status_code == 403
    assert _post(api, run_id, _rows(3, 4), headers=api.h(outsider)).status_code == 404
    # both runs of a diff must be visible: the outsider's own run against ours is a 404 either way
    theirs = _run(api, token=outsider, project="elsewhere")
    for run, other, token in ((run_id, theirs, viewer), (theirs, run_id, outsider)):
        r = api.client.get(
            f"/api/v1/runs/{run}/examples/diff",
            params={"other": other, "table": "gradings"},
            headers=api.h(token),
        )
        assert r.status_code == 404, r.text


def test_a_page_narrowed_by_conditions_stays_a_keyset_page(api: Api) -> None:
    """Where the query language's filter (``q``) goes: conditions on the rows, paged by idx after them."""
    run_id = _claimed(api)
    assert _post(api, run_id, _rows(0, 30), attempt=1).status_code == 200
    with session_scope(session_factory(get_engine(api.settings.database_url))) as session:
        admin = session.scalars(select(User).where(User.is_admin.is_(True))).first()
        principal = Principal(user=admin)
        even = [RunExample.idx.in_(list(range(0, 30, 2)))]
        first = service.page(session, principal, run_id, "gradings", None, 4, even)
        assert [r.idx for r in first.items] == [0, 2, 4, 6] and first.total == 30
        second = service.page(session, principal, run_id, "gradings", first.next_cursor, 20, even)
        assert [r.idx for r in second.items] == list(range(8, 30, 2)) and second.next_cursor is None


def test_rows_are_filtered_with_the_query_language(api: Api) -> None:
    """``q`` on a table's rows: the language's operators over ``idx``, ``key`` and ``data.<path>``, pages
    still keyset; a bad expression is the language's 422 with its position; an unknown field names the
    fields of example rows."""
    run_id = _claimed(api)
    rows = [
        {
            "idx": i,
            "key": f"item-{i:04d}",
            "data": {"item": i, "correct": i % 3 == 0, "topic": ["sport", "cooking"][i % 2], "score": i / 10},
        }
        for i in range(40)
    ]
    assert _post(api, run_id, rows, attempt=1).status_code == 200

    def matched(q: str, limit: int = 100) -> list[int]:
        seen: list[int] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"table": "gradings", "q": q, "limit": limit}
            if cursor:
                params["cursor"] = cursor
            r = _page(api, run_id, **params)
            assert r.status_code == 200, r.text
            seen += [row["idx"] for row in r.json()["items"]]
            cursor = r.json()["next_cursor"]
            if cursor is None:
                return seen

    want = [i for i in range(40) if i % 3 == 0 and i % 2 == 0]
    assert matched('data.correct = true and data.topic = "sport"', limit=2) == want
    assert matched("data.score >= 3.5") == list(range(35, 40))
    assert matched('key in ("item-0001", "item-0039") or idx < 1') == [0, 1, 39]
    assert matched('not data.topic contains "sport" and idx <= 5') == [1, 3, 5]
    assert matched("data.grader missing and idx = 2") == [2]
    assert matched("data.grader exists") == []
    # a string literal never matches a stored number (the language compares like with like)
    assert matched('data.item = "7"') == []

    bad = _page(api, run_id, table="gradings", q="data.score >")
    assert bad.status_code == 422
    detail = bad.json()["errors"][0]
    assert detail["loc"] == ["query", "q"] and "position 12" in detail["msg"]
    unknown = _page(api, run_id, table="gradings", q="reply = 'x'")
    assert unknown.status_code == 422
    msg = unknown.json()["errors"][0]["msg"]
    assert "unknown field 'reply'" in msg and "data.<path>" in msg and "idx" in msg


def _routing(*probs: float) -> list[dict[str, Any]]:
    """A ReasonFormer row's ``routing`` (worker/kinds/reasonformer/common/prediction_rows.py): per step
    the skills chosen, the router's distribution and the stop gate."""
    return [
        {"step": 1, "skills": ["sort"], "probs": {"sort": p, "reverse": round(1 - p, 8)}, "stop_gate": 0.1}
        for p in probs
    ]


def _prediction(
    prediction: str = "a", correct: Any = True, probs: tuple[float, ...] = (0.25,), **extra: Any
) -> dict[str, Any]:
    return {"prediction": prediction, "correct": correct, "routing": _routing(*probs), **extra}


# two runs' ``predictions``: per key, (run a's data, run b's data); run b lacks p-8
_RULE_ROWS: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {
    "p-0": (_prediction(), _prediction(probs=(0.25000001,))),  # within the default 1e-6 relative
    "p-1": (_prediction(), _prediction(probs=(0.2501,))),  # 4e-4 relative: within 1e-3
    "p-2": (_prediction(), _prediction("b", False)),  # truly changed: prediction and correct
    "p-3": (_prediction(), _prediction(correct=1)),  # true is not 1
    "p-4": (_prediction(score=1), _prediction(score=1.0)),  # 1 is 1.0 (their JSON text differs)
    "p-5": (_prediction(), _prediction(note=None)),  # a field one row lacks differs from null
    "p-6": (_prediction(), _prediction(probs=(0.25, 0.25))),  # a step more: an array of another length
    "p-7": (_prediction(loss=1000.0), _prediction(loss=1000.5)),  # 5e-4 relative, 0.5 absolute
    "p-8": (_prediction(), None),
}


def _rule_runs(api: Api) -> tuple[int, int]:
    a, b = _claimed(api), _claimed(api)
    mine = [{"idx": i, "key": k, "data": d} for i, (k, (d, _)) in enumerate(_RULE_ROWS.items())]
    theirs = [{"idx": i, "key": k, "data": d} for i, (k, (_, d)) in enumerate(_RULE_ROWS.items()) if d]
    assert _post(api, a, mine, table="predictions", attempt=1).status_code == 200
    assert _post(api, b, theirs, table="predictions", attempt=1).status_code == 200
    return a, b


def _diff_pages(api: Api, run_id: int, other: int, limit: int, **rule: Any) -> list[dict[str, Any]]:
    pages: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(100):
        params: dict[str, Any] = {"other": other, "table": "predictions", "limit": limit, **rule}
        if cursor:
            params["cursor"] = cursor
        r = api.client.get(f"/api/v1/runs/{run_id}/examples/diff", params=params, headers=api.h())
        assert r.status_code == 200, r.text
        pages.append(r.json())
        cursor = r.json()["next_cursor"]
        if cursor is None:
            return pages
    raise AssertionError("the diff's cursor never ended")


def test_a_diff_compares_numbers_within_a_tolerance_and_only_the_chosen_fields(api: Api) -> None:
    """Router probabilities that differ in their last digits are no change; a tolerance (relative,
    absolute) widens that, also for numbers nested in arrays and objects; ``fields`` narrows what makes
    an item changed (the database narrows the rows on those fields' JSON; both dialects)."""
    a, b = _rule_runs(api)

    def changed(limit: int = 50, **rule: Any) -> dict[str, list[str]]:
        items = [d for p in _diff_pages(api, a, b, limit, **rule) for d in p["items"]]
        assert items[-1]["key"] == "p-8" and items[-1]["change"] == "only_run"  # whatever the rule
        assert all(d["change"] == "changed" for d in items[:-1])
        return {d["key"]: d["differing"] for d in items[:-1]}

    default = {
        "p-1": ["routing"],
        "p-2": ["prediction", "correct"],
        "p-3": ["correct"],
        "p-5": ["note"],
        "p-6": ["routing"],
        "p-7": ["loss"],
    }
    for limit in (1, 2, 50):
        assert changed(limit) == default, limit
    assert changed(tolerance=1e-6) == default
    assert list(changed(tolerance=0)) == ["p-0", "p-1", "p-2", "p-3", "p-5", "p-6", "p-7"]  # 1 is still 1.0
    assert list(changed(tolerance=1e-3)) == ["p-2", "p-3", "p-5", "p-6"]
    assert list(changed(tolerance=0, abs_tolerance=0.001)) == ["p-2", "p-3", "p-5", "p-6", "p-7"]
    assert list(changed(tolerance=0, abs_tolerance=0.6)) == ["p-2", "p-3", "p-5", "p-6"]
    # the fields that define a change: other fields may differ (listed in differing) without making one
    for limit in (1, 50):
        assert changed(limit, fields="prediction,correct") == {
            "p-2": ["prediction", "correct"],
            "p-3": ["correct"],
        }
    assert changed(fields="prediction") == {"p-2": ["prediction", "correct"]}
    assert changed(fields="correct") == {"p-2": ["prediction", "correct"], "p-3": ["correct"]}
    assert changed(fields="note") == {"p-5": ["note"]}
    assert changed(fields="routing", tolerance=1e-3) == {"p-6": ["routing"]}
    assert changed(fields="routing,loss", tolerance=0) == {
        "p-0": ["routing"],
        "p-1": ["routing"],
        "p-6": ["routing"],
        "p-7": ["loss"],
    }
    assert changed(fields="nothing-of-that-name") == {}
    page = _diff_pages(api, a, b, 50, fields=" prediction, ,correct,prediction", tolerance=0.01)[0]
    assert (page["fields"], page["tolerance"], page["abs_tolerance"]) == (
        ["prediction", "correct"],
        0.01,
        0.0,
    )
    default_page = _diff_pages(api, a, b, 50)[0]
    assert (default_page["fields"], default_page["tolerance"]) == ([], 1e-6)
    # the other way round: the same items, the sides swapped
    reverse = [d for p in _diff_pages(api, b, a, 50, fields="prediction,correct") for d in p["items"]]
    assert [(d["key"], d["change"]) for d in reverse] == [
        ("p-2", "changed"),
        ("p-3", "changed"),
        ("p-8", "only_other"),
    ]
    assert reverse[0]["run"]["data"]["prediction"] == "b" and reverse[0]["other"]["data"]["prediction"] == "a"


def test_a_diff_page_fills_past_rows_equal_within_the_tolerance(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows whose JSON text differs but whose numbers are within the tolerance are read and dropped a
    chunk at a time: the page still fills with the changed rows behind them, within one window."""
    monkeypatch.setattr(service, "DIFF_CHUNK", 4)
    a, b = _claimed(api), _claimed(api)
    mine = [{"idx": i, "key": f"k-{i:03d}", "data": _prediction(probs=(0.5, 0.25))} for i in range(40)]
    theirs = [
        {
            "idx": i,
            "key": f"k-{i:03d}",
            "data": _prediction("z" if i in (31, 37) else "a", probs=(0.5000001, 0.25)),
        }
        for i in range(40)
    ]
    assert _post(api, a, mine, table="predictions", attempt=1).status_code == 200
    assert _post(api, b, theirs, table="predictions", attempt=1).status_code == 200
    first, *rest = _diff_pages(api, a, b, 2)
    assert [d["key"] for d in first["items"]] == ["k-031", "k-037"]
    assert first["scanned"] == 38  # up to the page's last item; the window goes on after it
    assert [d for p in rest for d in p["items"]] == []
    # with no tolerance every row is a change, and pages of two follow one another
    exact = _diff_pages(api, a, b, 2, tolerance=0)
    assert [len(p["items"]) for p in exact] == [2] * 20 + [0]


def test_a_diff_rule_is_validated_naming_its_parameter(api: Api) -> None:
    a, b = _rule_runs(api)

    def loc(**params: Any) -> list[Any]:
        r = api.client.get(
            f"/api/v1/runs/{a}/examples/diff",
            params={"other": b, "table": "predictions", **params},
            headers=api.h(),
        )
        assert r.status_code == 422, r.text
        return list(r.json()["errors"][0]["loc"])

    assert loc(fields='prediction,"correct') == ["query", "fields"]
    assert loc(fields="x" * 65) == ["query", "fields"]
    assert loc(fields=",".join(f"f{i}" for i in range(33))) == ["query", "fields"]
    assert loc(fields="a\tb") == ["query", "fields"]  # a control character
    for bad in ("-1", "1.5", "nan", "inf", "lots"):
        assert loc(tolerance=bad) == ["query", "tolerance"], bad
    for bad in ("-0.5", "inf", "nan"):
        assert loc(abs_tolerance=bad) == ["query", "abs_tolerance"], bad
