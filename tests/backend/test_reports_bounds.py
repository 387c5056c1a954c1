"""The reports' bounds (one member cannot make a read do unbounded work), on SQLite and Postgres:
the list's ``limit`` (a default, a maximum, a 422 at ``["query", "limit"]`` past it), its keyset pages
newest first (every report exactly once while reports are saved, deleted and created between pages), the
summaries each page carries, the project's cap (409 naming it, nothing stored lost, two requests at once
cannot both take the last place), and the SDK reading every page."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest

from backend.db import get_engine, session_factory, session_scope, utcnow
from backend.models import Report
from backend.projects import repository as projects_repo
from backend.reports import service
from reasonlab_sdk import client as sdk_client
from reasonlab_sdk.client import ReasonLabClient
from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix


def _pid(api: Api) -> int:
    projects = api.client.get("/api/v1/projects", headers=api.h()).json()
    return next(p["id"] for p in projects if p["name"] == "default")


def _heading(text: str) -> dict[str, Any]:
    return {"id": "h1", "type": "heading", "text": text, "level": 2}


def _post(api: Api, pid: int, title: str, token: str | None = None) -> Any:
    return api.client.post(
        f"/api/v1/projects/{pid}/reports",
        json={"title": title, "blocks": [_heading(title)]},
        headers=api.h(token),
    )


def _create(api: Api, pid: int, title: str, token: str | None = None) -> dict[str, Any]:
    res = _post(api, pid, title, token)
    assert res.status_code == 201, res.text
    return dict(res.json())


def _bulk(api: Api, pid: int, titles: list[str]) -> list[int]:
    """Reports stored directly, faster than one request each; their ids, oldest first."""
    factory = session_factory(get_engine(api.settings.database_url))
    with session_scope(factory) as session:
        now = utcnow()
        rows = [
            Report(project_id=pid, title=t, blocks=[], version=1, created_at=now, updated_at=now)
            for t in titles
        ]
        session.add_all(rows)
        session.flush()
        return [r.id for r in rows]


def _list(api: Api, pid: int, **query: Any) -> Any:
    return api.client.get(f"/api/v1/projects/{pid}/reports", params=query, headers=api.h())


def test_the_limit_has_a_default_and_a_maximum(api: Api) -> None:
    pid = _pid(api)
    for bad in (service.LIST_MAX + 1, 0, -1):
        res = _list(api, pid, limit=bad)
        assert res.status_code == 422, res.text
        assert res.json()["errors"][0]["loc"] == ["query", "limit"], res.json()
    res = _list(api, pid, cursor="not-a-cursor")
    assert res.status_code == 422 and res.json()["errors"][0]["loc"] == ["query", "cursor"], res.text
    assert service.LIST_DEFAULT < service.LIST_MAX and service.MAX_REPORTS <= service.LIST_MAX
    ids = _bulk(api, pid, [f"r{i}" for i in range(service.LIST_DEFAULT + 1)])
    newest_first = ids[::-1]
    page = _list(api, pid).json()  # the default limit
    assert [r["id"] for r in page["items"]] == newest_first[: service.LIST_DEFAULT] and page["next_cursor"]
    rest = _list(api, pid, cursor=page["next_cursor"]).json()
    assert [r["id"] for r in rest["items"]] == newest_first[service.LIST_DEFAULT :]
    assert rest["next_cursor"] is None
    whole = _list(api, pid, limit=service.LIST_MAX).json()
    assert [r["id"] for r in whole["items"]] == newest_first and whole["next_cursor"] is None


def test_paging_returns_every_report_exactly_once(api: Api) -> None:
    pid = _pid(api)
    meg = api.user("meg")
    ids = [_create(api, pid, f"report {i}", token=meg if i % 2 else None)["id"] for i in range(7)]
    first = _list(api, pid, limit=3).json()
    assert [r["id"] for r in first["items"]] == ids[::-1][:3]
    # between the reads: the oldest report is saved (its updated_at moves, its place in the list does
    # not), one of a later page is deleted, one is created (newer than every page: not in this walk)
    oldest = api.client.get(f"/api/v1/reports/{ids[0]}", headers=api.h()).json()
    saved = api.client.put(
        f"/api/v1/reports/{ids[0]}",
        json={"base_version": oldest["version"], "title": "report 0, edited", "blocks": oldest["blocks"]},
        headers=api.h(),
    )
    assert saved.status_code == 200, saved.text
    assert api.client.delete(f"/api/v1/reports/{ids[2]}", headers=api.h()).status_code == 204
    _create(api, pid, "created meanwhile")
    seen = [r["id"] for r in first["items"]]
    cursor = first["next_cursor"]
    while cursor is not None:
        page = _list(api, pid, limit=3, cursor=cursor).json()
        seen += [r["id"] for r in page["items"]]
        cursor = page["next_cursor"]
    assert seen == [i for i in ids[::-1] if i != ids[2]]
    # each summary as the report is: title, author, version, published revisions
    report = api.client.get(f"/api/v1/reports/{ids[1]}", headers=api.h()).json()
    published = api.client.post(
        f"/api/v1/reports/{ids[1]}/publish", json={"base_version": report["version"]}, headers=api.h()
    )
    assert published.status_code == 201, published.text
    items = {r["id"]: r for r in _list(api, pid, limit=service.LIST_MAX).json()["items"]}
    assert items[ids[1]]["revisions"] == 1 and items[ids[3]]["revisions"] == 0
    assert items[ids[1]]["author"] == "meg" and items[ids[0]]["author"] == "admin"
    assert items[ids[0]]["title"] == "report 0, edited" and items[ids[0]]["version"] == 2


def test_past_the_cap_a_report_is_refused_and_nothing_stored_is_lost(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "MAX_REPORTS", 3)
    pid = _pid(api)
    stored = [_create(api, pid, f"r{i}") for i in range(3)]
    before = _list(api, pid).json()["items"]
    res = _post(api, pid, "one too many")
    assert res.status_code == 409, res.text
    body = res.json()
    assert body["code"] == "conflict" and "3" in body["detail"] and "reports" in body["detail"], body
    assert body["errors"] == [
        {
            "loc": ["path", "project_id"],
            "msg": "at most 3 reports a project: delete one to create another",
            "type": "project_full",
        }
    ]
    assert _list(api, pid).json()["items"] == before
    for r in stored:  # each report whole, as it was
        got = api.client.get(f"/api/v1/reports/{r['id']}", headers=api.h()).json()
        assert (got["title"], got["version"], got["blocks"]) == (r["title"], r["version"], r["blocks"])
    feed = api.client.get(f"/api/v1/projects/{pid}/activity", headers=api.h()).json()
    assert not any("one too many" in row["message"] for row in feed)
    # a full project's reports are still saved; deleting one makes room
    saved = api.client.put(
        f"/api/v1/reports/{stored[0]['id']}",
        json={"base_version": stored[0]["version"], "title": "r0 edited", "blocks": stored[0]["blocks"]},
        headers=api.h(),
    )
    assert saved.status_code == 200, saved.text
    assert api.client.delete(f"/api/v1/reports/{stored[1]['id']}", headers=api.h()).status_code == 204
    assert _post(api, pid, "one too many").status_code == 201
    assert _post(api, pid, "and another").status_code == 409
    # the cap is a project's: another project has room
    ozzie = api.user("ozzie", project="elsewhere")
    other = next(
        p["id"]
        for p in api.client.get("/api/v1/projects", headers=api.h()).json()
        if p["name"] == "elsewhere"
    )
    assert _post(api, other, "r0", token=ozzie).status_code == 201


def test_two_reports_at_once_cannot_both_take_the_last_place(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer holds a new report in its open transaction (the project's row locked, as a create
    does) while a request creates one at the cap's last place: the request waits for it, then counts it
    and is refused (409), so the project never holds more than the cap."""
    monkeypatch.setattr(service, "MAX_REPORTS", 2)
    pid = _pid(api)
    _create(api, pid, "first")
    factory = session_factory(get_engine(api.settings.database_url))
    held = factory()
    answers: list[Any] = []
    try:
        projects_repo.lock_for_cap(held, pid)
        now = utcnow()
        held.add(Report(project_id=pid, title="held", blocks=[], version=1, created_at=now, updated_at=now))
        held.flush()
        request = threading.Thread(target=lambda: answers.append(_post(api, pid, "racing")))
        request.start()
        request.join(1.0)
        assert request.is_alive(), "the request did not wait for the open transaction"
        if api.settings.database_url.startswith("postgresql"):
            # the project's row is held FOR NO KEY UPDATE: a write that only references the project (a
            # new experiment and its runs) does not wait for it
            res = api.submit({}, name="meanwhile")
            assert res.status_code == 201, res.text
        held.commit()
        request.join(30)
        assert not request.is_alive()
    finally:
        held.close()
    assert answers[0].status_code == 409, answers[0].text
    assert sorted(r["title"] for r in _list(api, pid).json()["items"]) == ["first", "held"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the client, not the SQL
def test_the_sdk_reads_every_page(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    assert sdk_client.REPORTS_PAGE == service.LIST_MAX  # the SDK asks with the largest page
    monkeypatch.setattr(sdk_client, "REPORTS_PAGE", 2)  # pages of 2 here
    pid = _pid(api)
    ids = _bulk(api, pid, [f"report {i}" for i in range(5)])
    requests: list[httpx.Request] = []

    def forward(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        answer = api.client.request(
            request.method, request.url.raw_path.decode(), content=request.content, headers=request.headers
        )
        headers = {k: v for k, v in answer.headers.items() if k.lower() != "content-encoding"}
        return httpx.Response(answer.status_code, headers=headers, content=answer.content)

    client = ReasonLabClient("http://testserver", api.admin_token, transport=httpx.MockTransport(forward))
    got = client.list_reports(pid)
    assert [r["id"] for r in got] == ids[::-1]
    assert [r.url.params.get("limit") for r in requests] == ["2", "2", "2"]
    assert [bool(r.url.params.get("cursor")) for r in requests] == [False, True, True]
