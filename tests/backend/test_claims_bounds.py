"""The claims' bounds (one member cannot make a read do unbounded work), on SQLite and Postgres:
the list's ``limit`` (a default, a maximum, a 422 at ``["query", "limit"]`` past it), its keyset pages
(every claim exactly once, while claims are stated and deleted between pages), the project's cap (409
naming it, nothing stored lost, two requests at once cannot both take the last place) and a claim's read
measuring at most the cap's claims (its family's, for Holm's correction)."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest

from backend.claims import evaluate, service
from backend.claims.schemas import ClaimDefinition
from backend.db import get_engine, session_factory, session_scope, utcnow
from backend.models import Claim, ClaimVersion
from reasonlab_sdk import client as sdk_client
from reasonlab_sdk.client import ReasonLabClient
from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix


def _pid(api: Api) -> int:
    projects = api.client.get("/api/v1/projects", headers=api.h()).json()
    return next(p["id"] for p in projects if p["name"] == "default")


def _definition(family: str | None = None) -> dict[str, Any]:
    return {
        "section": "001 §4.2",
        "arms": [
            {"name": "private", "query": "params.train.lr = 0.1"},
            {"name": "shared", "query": "params.train.lr = 0.2"},
        ],
        "metric": "acc",
        "direction": "greater",
        "family": family,
    }


def _state(api: Api, pid: int, name: str, family: str | None = None) -> Any:
    return api.client.post(
        f"/api/v1/projects/{pid}/claims",
        json={"name": name, "definition": _definition(family)},
        headers=api.h(),
    )


def _create(api: Api, pid: int, name: str, family: str | None = None) -> dict[str, Any]:
    res = _state(api, pid, name, family)
    assert res.status_code == 201, res.text
    return dict(res.json())


def _list(api: Api, pid: int, **query: Any) -> Any:
    return api.client.get(f"/api/v1/projects/{pid}/claims", params=query, headers=api.h())


def _walk(api: Api, pid: int, limit: int) -> list[list[int]]:
    """Every page's claim ids, following next_cursor to the last page."""
    pages: list[list[int]] = []
    cursor: str | None = None
    while True:
        res = _list(api, pid, limit=limit, **({"cursor": cursor} if cursor else {}))
        assert res.status_code == 200, res.text
        pages.append([c["id"] for c in res.json()["items"]])
        cursor = res.json()["next_cursor"]
        if cursor is None:
            return pages


def _bulk(api: Api, pid: int, names: list[str]) -> list[int]:
    """Claims stored directly (each with its version 1), faster than one request each."""
    definition = ClaimDefinition.model_validate(_definition())
    factory = session_factory(get_engine(api.settings.database_url))
    with session_scope(factory) as session:
        now = utcnow()
        claims = [Claim(project_id=pid, name=n, version=1, created_at=now, updated_at=now) for n in names]
        session.add_all(claims)
        session.flush()
        for c in claims:
            session.add(
                ClaimVersion(
                    claim_id=c.id,
                    version=1,
                    definition=definition.model_dump(mode="json"),
                    hash=service.digest(definition),
                    created_at=now,
                )
            )
        return [c.id for c in claims]


def test_the_limit_has_a_default_and_a_maximum(api: Api) -> None:
    pid = _pid(api)
    for bad in (service.LIST_MAX + 1, 0, -1):
        res = _list(api, pid, limit=bad)
        assert res.status_code == 422, res.text
        assert res.json()["errors"][0]["loc"] == ["query", "limit"], res.json()
    res = _list(api, pid, cursor="not-a-cursor")
    assert res.status_code == 422 and res.json()["errors"][0]["loc"] == ["query", "cursor"], res.text
    assert service.LIST_DEFAULT < service.LIST_MAX and service.MAX_CLAIMS <= service.LIST_MAX
    ids = _bulk(api, pid, [f"c{i}" for i in range(service.LIST_DEFAULT + 1)])
    page = _list(api, pid).json()  # the default limit
    assert [c["id"] for c in page["items"]] == ids[: service.LIST_DEFAULT] and page["next_cursor"]
    rest = _list(api, pid, cursor=page["next_cursor"]).json()
    assert [c["id"] for c in rest["items"]] == ids[service.LIST_DEFAULT :] and rest["next_cursor"] is None
    whole = _list(api, pid, limit=service.LIST_MAX).json()  # the largest page: all of them
    assert [c["id"] for c in whole["items"]] == ids and whole["next_cursor"] is None


def test_paging_returns_every_claim_exactly_once(api: Api) -> None:
    pid = _pid(api)
    ids = [_create(api, pid, f"claim {i}")["id"] for i in range(7)]
    pages = _walk(api, pid, 3)
    assert [len(p) for p in pages] == [3, 3, 1]
    assert [i for p in pages for i in p] == ids  # by id, each once
    # a page at a time while claims are deleted and stated between the reads: each claim there throughout
    # is seen once, the new one (a higher id) too, the deleted one of a later page not at all
    first = _list(api, pid, limit=3).json()
    assert [c["id"] for c in first["items"]] == ids[:3]
    assert api.client.delete(f"/api/v1/claims/{ids[1]}", headers=api.h()).status_code == 204
    assert api.client.delete(f"/api/v1/claims/{ids[4]}", headers=api.h()).status_code == 204
    new = _create(api, pid, "stated meanwhile")["id"]
    seen = [c["id"] for c in first["items"]]
    cursor = first["next_cursor"]
    while cursor is not None:
        page = _list(api, pid, limit=3, cursor=cursor).json()
        seen += [c["id"] for c in page["items"]]
        cursor = page["next_cursor"]
    assert seen == ids[:4] + ids[5:] + [new]
    # every page's claim carries its evaluation, as the whole list's did
    page = _list(api, pid, limit=1).json()
    assert page["items"][0]["evaluation"]["family_size"] == 1 and page["next_cursor"] is not None


def test_past_the_cap_a_claim_is_refused_and_nothing_stored_is_lost(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "MAX_CLAIMS", 3)
    pid = _pid(api)
    stored = [_create(api, pid, f"c{i}") for i in range(3)]
    before = _list(api, pid).json()["items"]
    res = _state(api, pid, "one too many")
    assert res.status_code == 409, res.text
    body = res.json()
    assert body["code"] == "conflict" and "3" in body["detail"] and "claims" in body["detail"], body
    assert body["errors"] == [
        {
            "loc": ["path", "project_id"],
            "msg": "at most 3 claims a project: delete one to state another",
            "type": "project_full",
        }
    ]
    after = _list(api, pid).json()["items"]
    assert [c["id"] for c in after] == [c["id"] for c in stored]
    assert [(c["name"], c["version"], c["hash"]) for c in after] == [
        (c["name"], c["version"], c["hash"]) for c in before
    ]
    feed = api.client.get(f"/api/v1/projects/{pid}/activity", headers=api.h()).json()
    assert not any("one too many" in row["message"] for row in feed)
    # editing a claim of a full project still works (no new claim); deleting one makes room
    renamed = api.client.patch(
        f"/api/v1/claims/{stored[0]['id']}", json={"name": "c0 renamed"}, headers=api.h()
    )
    assert renamed.status_code == 200, renamed.text
    assert api.client.delete(f"/api/v1/claims/{stored[1]['id']}", headers=api.h()).status_code == 204
    assert _state(api, pid, "one too many").status_code == 201
    assert _state(api, pid, "and another").status_code == 409
    # the cap is a project's: another project has room
    api.user("ozzie", project="elsewhere")
    other = next(
        p["id"]
        for p in api.client.get("/api/v1/projects", headers=api.h()).json()
        if p["name"] == "elsewhere"
    )
    assert _state(api, other, "c0").status_code == 201


def test_a_claims_read_measures_at_most_the_cap(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """Holm's correction runs over the claim's whole family, so one claim's read measures every claim of
    its family in the project: at most the cap, which is what bounds it (a page of one as well)."""
    monkeypatch.setattr(service, "MAX_CLAIMS", 4)
    pid = _pid(api)
    family = [_create(api, pid, f"f{i}", family="F")["id"] for i in range(3)]
    alone = _create(api, pid, "alone")["id"]
    assert _state(api, pid, "f3", family="F").status_code == 409  # the family cannot grow past the cap
    measured: list[int] = []
    real = evaluate._measure

    def counting(session: Any, claim: Claim, definition: Any, digest: str) -> Any:
        measured.append(claim.id)
        return real(session, claim, definition, digest)

    monkeypatch.setattr(evaluate, "_measure", counting)
    got = api.client.get(f"/api/v1/claims/{family[0]}", headers=api.h()).json()
    assert sorted(measured) == family and got["evaluation"]["family_size"] == 3
    measured.clear()
    api.client.get(f"/api/v1/claims/{alone}", headers=api.h())
    assert measured == [alone]
    measured.clear()
    page = _list(api, pid, limit=1).json()  # a page of one claim of F measures F
    assert [c["id"] for c in page["items"]] == family[:1] and sorted(measured) == family
    measured.clear()
    _walk(api, pid, service.LIST_MAX)  # the whole list: each claim once
    assert sorted(measured) == sorted([*family, alone]) and len(measured) <= service.MAX_CLAIMS


def test_two_claims_at_once_cannot_both_take_the_last_place(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer holds a new claim in its open transaction (the project's row locked, as a create
    does) while a request states one at the cap's last place: the request waits for it, then counts it
    and is refused (409), so the project never holds more than the cap."""
    from backend.projects import repository

    monkeypatch.setattr(service, "MAX_CLAIMS", 2)
    pid = _pid(api)
    _create(api, pid, "first")
    factory = session_factory(get_engine(api.settings.database_url))
    held = factory()
    answers: list[Any] = []
    try:
        repository.lock_for_cap(held, pid)
        now = utcnow()
        claim = Claim(project_id=pid, name="held", version=1, created_at=now, updated_at=now)
        held.add(claim)
        held.flush()
        definition = ClaimDefinition.model_validate(_definition())
        held.add(
            ClaimVersion(
                claim_id=claim.id,
                version=1,
                definition=definition.model_dump(mode="json"),
                hash=service.digest(definition),
                created_at=now,
            )
        )
        held.flush()
        request = threading.Thread(target=lambda: answers.append(_state(api, pid, "racing")))
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
    names = [c["name"] for c in _list(api, pid).json()["items"]]
    assert names == ["first", "held"]


def _sdk(api: Api, requests: list[httpx.Request]) -> ReasonLabClient:
    """The SDK's client, its requests answered by the test's app (and kept in ``requests``)."""

    def forward(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        answer = api.client.request(
            request.method, request.url.raw_path.decode(), content=request.content, headers=request.headers
        )
        headers = {k: v for k, v in answer.headers.items() if k.lower() != "content-encoding"}
        return httpx.Response(answer.status_code, headers=headers, content=answer.content)

    return ReasonLabClient("http://testserver", api.admin_token, transport=httpx.MockTransport(forward))


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the clients, not the SQL
def test_the_sdk_and_the_cli_read_every_page(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from cli import client as cli_client
    from cli.main import main

    assert sdk_client.CLAIMS_PAGE == service.LIST_MAX  # the SDK asks with the largest page
    monkeypatch.setattr(sdk_client, "CLAIMS_PAGE", 2)  # pages of 2 here
    pid = _pid(api)
    ids = _bulk(api, pid, [f"claim {i}" for i in range(5)])
    requests: list[httpx.Request] = []
    got = _sdk(api, requests).list_claims(pid)
    assert [c["id"] for c in got] == ids
    assert [r.url.params.get("limit") for r in requests] == ["2", "2", "2"]
    assert [bool(r.url.params.get("cursor")) for r in requests] == [False, True, True]
    monkeypatch.setattr(cli_client, "_client", lambda *_: _sdk(api, []))
    listed = CliRunner().invoke(main, ["claims", "list"])
    assert listed.exit_code == 0, listed.output
    assert [line.split()[0] for line in listed.output.splitlines()[1:]] == [str(i) for i in ids]
    shown = CliRunner().invoke(main, ["claims", "show", "claim 4", "--json"])  # on the last page
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["id"] == ids[4]
