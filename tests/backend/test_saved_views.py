"""Saved views (backend/views/): CRUD, who may do what, strict state validation with field paths,
duplicate names, and views of other projects."""

from __future__ import annotations

from typing import Any

import pytest

from tests.backend.conftest import Api

STATE: dict[str, Any] = {
    "query": "params.lr >= 0.001 and status = 'succeeded'",
    "columns": [
        {"field": "name"},
        {"field": "metrics.val/loss", "aggregate": "min", "width": 120},
        {"field": "params.model.depth"},
    ],
    "group_by": "all spec fields but seed",
    "sort": {"field": "metrics.val/loss", "order": "asc", "aggregate": "min"},
    "chart": {"metric": "val/loss", "mode": "envelope", "x": "time"},
    "charts": [
        {"metric": "val/loss", "log_scale": True, "smoothing": 0.6, "x_axis": "step"},
        {"metric": "system/cpu_percent", "log_scale": False, "smoothing": 0.0, "x_axis": "time"},
    ],
}


def _project_id(api: Api, token: str) -> int:
    projects = api.client.get("/api/v1/projects", headers=api.h(token)).json()
    return next(p["id"] for p in projects if p["name"] == "default")


def _url(project_id: int, view_id: int | None = None) -> str:
    base = f"/api/v1/projects/{project_id}/views"
    return base if view_id is None else f"{base}/{view_id}"


def test_a_member_saves_a_view_another_member_reads_it_and_the_author_renames_and_deletes_it(
    api: Api,
) -> None:
    meg, max_ = api.user("meg"), api.user("max")
    pid = _project_id(api, meg)
    created = api.client.post(
        _url(pid), json={"name": "lr sweep", "page": "runs", "state": STATE}, headers=api.h(meg)
    )
    assert created.status_code == 201, created.text
    view = created.json()
    assert view["name"] == "lr sweep" and view["page"] == "runs" and view["author"] == "meg"
    assert view["can_edit"] is True
    # defaults filled in where the body left them out: the column with no aggregate or width
    assert view["state"]["columns"][0] == {"field": "name", "aggregate": None, "width": None}
    assert view["state"]["columns"][1] == STATE["columns"][1]
    assert view["state"]["group_by"] == "all spec fields but seed"
    assert view["state"]["charts"] == STATE["charts"]

    # another member of the project reads the same state, but may not change it
    seen = api.client.get(_url(pid, view["id"]), headers=api.h(max_))
    assert seen.status_code == 200
    assert seen.json()["state"] == view["state"] and seen.json()["can_edit"] is False
    listed = api.client.get(_url(pid), headers=api.h(max_)).json()
    assert [v["name"] for v in listed] == ["lr sweep"]
    assert (
        api.client.patch(_url(pid, view["id"]), json={"name": "mine"}, headers=api.h(max_)).status_code == 403
    )
    assert api.client.delete(_url(pid, view["id"]), headers=api.h(max_)).status_code == 403

    # the author renames it and replaces its state
    patched = api.client.patch(
        _url(pid, view["id"]),
        json={
            "name": "lr sweep (seeds)",
            "state": {"query": "kind = 'carma'", "group_by": ["params.lambda"]},
        },
        headers=api.h(meg),
    )
    assert patched.status_code == 200, patched.text
    body = patched.json()
    assert body["name"] == "lr sweep (seeds)"
    assert body["state"] == {
        "query": "kind = 'carma'",
        "columns": [],
        "group_by": ["params.lambda"],
        "sort": None,
        "chart": None,
        "charts": [],
        "runs": [],
    }
    assert body["updated_at"] >= view["updated_at"] and body["created_at"] == view["created_at"]
    assert api.client.get(_url(pid, view["id"]), headers=api.h(max_)).json()["name"] == "lr sweep (seeds)"

    assert api.client.delete(_url(pid, view["id"]), headers=api.h(meg)).status_code == 204
    assert api.client.get(_url(pid, view["id"]), headers=api.h(meg)).status_code == 404
    assert api.client.get(_url(pid), headers=api.h(meg)).json() == []


def test_a_project_admin_changes_and_deletes_a_members_view(api: Api) -> None:
    meg, pat = api.user("meg"), api.user("pat", role="admin")
    pid = _project_id(api, meg)
    view = api.client.post(_url(pid), json={"name": "v", "page": "experiments"}, headers=api.h(meg)).json()
    assert api.client.get(_url(pid, view["id"]), headers=api.h(pat)).json()["can_edit"] is True
    renamed = api.client.patch(_url(pid, view["id"]), json={"name": "w"}, headers=api.h(pat))
    assert renamed.status_code == 200 and renamed.json()["name"] == "w" and renamed.json()["author"] == "meg"
    assert api.client.delete(_url(pid, view["id"]), headers=api.h(pat)).status_code == 204


def test_a_viewer_reads_views_but_cannot_save_one(api: Api) -> None:
    meg, vic = api.user("meg"), api.user("vic", role="viewer")
    pid = _project_id(api, meg)
    view = api.client.post(_url(pid), json={"name": "v", "page": "compare"}, headers=api.h(meg)).json()
    assert (
        api.client.post(_url(pid), json={"name": "x", "page": "runs"}, headers=api.h(vic)).status_code == 403
    )
    assert api.client.get(_url(pid, view["id"]), headers=api.h(vic)).status_code == 200
    assert [v["id"] for v in api.client.get(_url(pid), headers=api.h(vic)).json()] == [view["id"]]


def test_a_non_member_gets_404_and_another_projects_view_is_404_under_this_project(api: Api) -> None:
    meg, ozzie = api.user("meg"), api.user("ozzie", project="elsewhere")
    pid = _project_id(api, meg)
    view = api.client.post(_url(pid), json={"name": "v", "page": "runs"}, headers=api.h(meg)).json()
    assert api.client.get(_url(pid), headers=api.h(ozzie)).status_code == 404
    assert api.client.get(_url(pid, view["id"]), headers=api.h(ozzie)).status_code == 404
    assert (
        api.client.post(_url(pid), json={"name": "x", "page": "runs"}, headers=api.h(ozzie)).status_code
        == 404
    )
    assert api.client.delete(_url(pid, view["id"]), headers=api.h(ozzie)).status_code == 404
    # ozzie's own project: meg's view id under it is not found (nor under a project that does not exist)
    other = next(p["id"] for p in api.client.get("/api/v1/projects", headers=api.h(ozzie)).json())
    assert other != pid
    assert api.client.get(_url(other, view["id"]), headers=api.h(ozzie)).status_code == 404
    assert (
        api.client.patch(_url(other, view["id"]), json={"name": "y"}, headers=api.h(ozzie)).status_code == 404
    )
    assert api.client.get(_url(pid, view["id"]), headers=api.h(meg)).json()["name"] == "v"
    assert api.client.get(_url(999_999), headers=api.h(meg)).status_code == 404


def test_a_duplicate_name_is_409_on_create_and_rename(api: Api) -> None:
    meg, max_ = api.user("meg"), api.user("max")
    pid = _project_id(api, meg)
    first = api.client.post(_url(pid), json={"name": "best", "page": "runs"}, headers=api.h(meg)).json()
    again = api.client.post(_url(pid), json={"name": "best", "page": "compare"}, headers=api.h(max_))
    assert again.status_code == 409
    assert again.json()["errors"][0]["loc"] == ["body", "name"]
    second = api.client.post(_url(pid), json={"name": "second", "page": "runs"}, headers=api.h(meg)).json()
    clash = api.client.patch(_url(pid, second["id"]), json={"name": "best"}, headers=api.h(meg))
    assert clash.status_code == 409
    # renaming a view to its own name is no clash; names are per project
    assert (
        api.client.patch(_url(pid, first["id"]), json={"name": "best"}, headers=api.h(meg)).status_code == 200
    )
    admin_pid = api.client.post("/api/v1/projects", json={"name": "side"}, headers=api.h()).json()["id"]
    assert (
        api.client.post(_url(admin_pid), json={"name": "best", "page": "runs"}, headers=api.h()).status_code
        == 201
    )


def _invalid(api: Api, token: str, pid: int, body: dict[str, Any]) -> list[list[Any]]:
    answer = api.client.post(_url(pid), json=body, headers=api.h(token))
    assert answer.status_code == 422, answer.text
    return [e["loc"] for e in answer.json()["errors"]]


def test_bad_state_and_names_are_422_naming_the_field_path(api: Api) -> None:
    meg = api.user("meg")
    pid = _project_id(api, meg)
    ok: dict[str, Any] = {"name": "v", "page": "runs"}
    # strict: an unknown field anywhere in the state
    assert ["body", "state", "colour"] in _invalid(api, meg, pid, ok | {"state": {"colour": "red"}})
    assert ["body", "state", "columns", 1, "style"] in _invalid(
        api, meg, pid, ok | {"state": {"columns": [{"field": "name"}, {"field": "kind", "style": "bold"}]}}
    )
    assert ["body", "state", "columns", 0, "aggregate"] in _invalid(
        api, meg, pid, ok | {"state": {"columns": [{"field": "metrics.loss", "aggregate": "median"}]}}
    )
    assert ["body", "state", "columns", 0, "field"] in _invalid(
        api, meg, pid, ok | {"state": {"columns": [{"field": "params. lr"}]}}
    )
    assert ["body", "state", "chart", "mode"] in _invalid(
        api, meg, pid, ok | {"state": {"chart": {"metric": "loss", "mode": "violin"}}}
    )
    assert ["body", "state", "sort", "order"] in _invalid(
        api, meg, pid, ok | {"state": {"sort": {"field": "name", "order": "up"}}}
    )
    # the query: at most 4 KB of UTF-8 (2,049 two-byte characters are 4,098 bytes)
    assert ["body", "state", "query"] in _invalid(api, meg, pid, ok | {"state": {"query": "é" * 2049}})
    # (a query that parses, as a saved query must: 10 + 2 x 2,043 = 4,096 bytes in 2,053 characters)
    at_limit_query = "name = 'x" + "é" * 2043 + "'"
    assert len(at_limit_query.encode()) == 4096
    at_limit = api.client.post(
        _url(pid),
        json={"name": "long", "page": "runs", "state": {"query": at_limit_query}},
        headers=api.h(meg),
    )
    assert at_limit.status_code == 201
    # grouping: fields, or the literal default, nothing else
    assert any(
        loc[:3] == ["body", "state", "group_by"]
        for loc in _invalid(api, meg, pid, ok | {"state": {"group_by": "seed"}})
    )
    assert any(
        loc[:3] == ["body", "state", "group_by"]
        for loc in _invalid(api, meg, pid, ok | {"state": {"group_by": ["params.lr", "params.lr"]}})
    )
    # the page and the name
    assert ["body", "page"] in _invalid(api, meg, pid, {"name": "v", "page": "reports"})
    for name in ("", " padded", "a" * 101, "tab\there", "semi;colon", "quote'"):
        assert ["body", "name"] in _invalid(api, meg, pid, {"name": name, "page": "runs"}), name
    assert ["body", "name"] in [
        e["loc"]
        for e in api.client.patch(
            _url(pid, at_limit.json()["id"]), json={"name": "x" * 101}, headers=api.h(meg)
        ).json()["errors"]
    ]
    assert ["body", "owner"] in _invalid(api, meg, pid, ok | {"owner": "meg"})
    # none of the refused bodies was stored
    assert [v["name"] for v in api.client.get(_url(pid), headers=api.h(meg)).json()] == ["long"]


def test_chart_options_and_compared_runs_are_stored_typed_and_bad_ones_are_422_at_their_path(
    api: Api,
) -> None:
    meg = api.user("meg")
    pid = _project_id(api, meg)
    ok: dict[str, Any] = {"name": "v", "page": "compare"}

    def charts(*entries: dict[str, Any]) -> dict[str, Any]:
        return ok | {"state": {"charts": list(entries)}}

    assert ["body", "state", "charts", 0, "smoothing"] in _invalid(
        api, meg, pid, charts({"metric": "loss", "smoothing": 1.5})
    )
    assert ["body", "state", "charts", 0, "smoothing"] in _invalid(
        api, meg, pid, charts({"metric": "loss", "smoothing": -0.1})
    )
    assert ["body", "state", "charts", 1, "x_axis"] in _invalid(
        api, meg, pid, charts({"metric": "loss"}, {"metric": "acc", "x_axis": "epoch"})
    )
    assert ["body", "state", "charts", 0, "log_scale"] in _invalid(
        api, meg, pid, charts({"metric": "loss", "log_scale": "sometimes"})
    )
    assert ["body", "state", "charts", 0, "metric"] in _invalid(api, meg, pid, charts({"metric": ""}))
    assert ["body", "state", "charts", 0, "colour"] in _invalid(
        api, meg, pid, charts({"metric": "loss", "colour": "red"})
    )
    assert ["body", "state", "charts"] in _invalid(
        api, meg, pid, charts({"metric": "loss"}, {"metric": "loss", "log_scale": True})
    )
    # the compared runs: ids from 1, each once
    assert ["body", "state", "runs", 1] in _invalid(api, meg, pid, ok | {"state": {"runs": [3, 0]}})
    assert ["body", "state", "runs"] in _invalid(api, meg, pid, ok | {"state": {"runs": [3, 4, 3]}})
    # none stored; a good one comes back with its defaults filled in
    assert api.client.get(_url(pid), headers=api.h(meg)).json() == []
    made = api.client.post(
        _url(pid),
        json=ok | {"state": {"charts": [{"metric": "loss", "log_scale": True}], "runs": [4, 3]}},
        headers=api.h(meg),
    )
    assert made.status_code == 201, made.text
    assert made.json()["state"]["charts"] == [
        {"metric": "loss", "log_scale": True, "smoothing": 0.0, "x_axis": "step"}
    ]
    assert made.json()["state"]["runs"] == [4, 3]


def test_an_empty_group_list_is_no_grouping(api: Api) -> None:
    meg = api.user("meg")
    pid = _project_id(api, meg)
    view = api.client.post(
        _url(pid), json={"name": "v", "page": "runs", "state": {"group_by": []}}, headers=api.h(meg)
    ).json()
    assert view["state"]["group_by"] is None


@pytest.mark.parametrize("database_url", ["sqlite", "postgres"], indirect=True)
def test_a_view_is_reached_by_its_id_alone_in_any_project_the_caller_sees(api: Api) -> None:
    """``/views/{id}``: no project in the path; the caller's role in the view's project decides, and a view
    of a project the caller is not in answers exactly what a missing view answers."""
    meg, max_ = api.user("meg", project="lab"), api.user("max", project="lab")
    vic, ozzie = api.user("vic", role="viewer", project="lab"), api.user("ozzie", project="elsewhere")
    lab = next(
        p["id"] for p in api.client.get("/api/v1/projects", headers=api.h(meg)).json() if p["name"] == "lab"
    )
    view = api.client.post(
        _url(lab), json={"name": "v", "page": "runs", "state": STATE}, headers=api.h(meg)
    ).json()
    api.client.post(_url(lab), json={"name": "taken", "page": "runs"}, headers=api.h(meg))
    by_id = f"/api/v1/views/{view['id']}"

    got = api.client.get(by_id, headers=api.h(meg))
    assert (
        got.status_code == 200
        and got.json() == api.client.get(_url(lab, view["id"]), headers=api.h(meg)).json()
    )
    assert got.json()["project_id"] == lab and got.json()["can_edit"] is True
    seen = api.client.get(by_id, headers=api.h(vic))
    assert (
        seen.status_code == 200 and seen.json()["state"] == view["state"] and seen.json()["can_edit"] is False
    )

    # another project's user: the answer of a view that does not exist, for every method
    missing = f"/api/v1/views/{view['id'] + 1000}"
    for method, body in (("GET", None), ("PATCH", {"name": "mine"}), ("DELETE", None)):
        hidden = api.client.request(method, by_id, json=body, headers=api.h(ozzie))
        absent = api.client.request(method, missing, json=body, headers=api.h(meg))
        assert hidden.status_code == absent.status_code == 404, (method, hidden.text)
        assert hidden.json()["detail"] == f"view {view['id']} not found"
        assert absent.json()["detail"] == f"view {view['id'] + 1000} not found"
    # roles as under the project's path: a viewer reads, another member may not change the author's view
    assert api.client.patch(by_id, json={"name": "w"}, headers=api.h(vic)).status_code == 403
    assert api.client.patch(by_id, json={"name": "w"}, headers=api.h(max_)).status_code == 403
    assert api.client.delete(by_id, headers=api.h(max_)).status_code == 403
    assert api.client.get(by_id, headers=api.h()).status_code == 200  # a site admin sees every project

    # the author renames it (a name taken in its project is 409 naming the field) and deletes it
    taken = api.client.patch(by_id, json={"name": "taken"}, headers=api.h(meg))
    assert taken.status_code == 409 and taken.json()["errors"][0]["loc"] == ["body", "name"]
    renamed = api.client.patch(
        by_id, json={"name": "w", "state": {"query": "kind = 'carma'"}}, headers=api.h(meg)
    )
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["name"] == "w" and renamed.json()["state"]["query"] == "kind = 'carma'"
    assert api.client.get(_url(lab, view["id"]), headers=api.h(max_)).json()["name"] == "w"
    assert api.client.delete(by_id, headers=api.h(meg)).status_code == 204
    assert api.client.get(by_id, headers=api.h(meg)).status_code == 404
    assert [v["name"] for v in api.client.get(_url(lab), headers=api.h(meg)).json()] == ["taken"]
    assert api.client.get("/api/v1/views/0", headers=api.h(meg)).status_code == 422  # an id is >= 1


@pytest.mark.dialect_matrix
def test_a_query_or_group_field_the_page_would_refuse_is_422_at_its_field_with_the_position(api: Api) -> None:
    meg = api.user("meg")
    pid = _project_id(api, meg)

    def errors(page: str, state: dict[str, Any]) -> list[dict[str, Any]]:
        answer = api.client.post(
            _url(pid), json={"name": "v", "page": page, "state": state}, headers=api.h(meg)
        )
        assert answer.status_code == 422, answer.text
        return list(answer.json()["errors"])

    for text in ("created > 9999-12-31", "name = '\\ud800'", "id = 99999999999999999999", "colour = 1"):
        [error] = errors("runs", {"query": text})
        assert error["loc"] == ["body", "state", "query"] and error["msg"].startswith("position "), text
    [error] = errors("experiments", {"query": "metrics.loss > 1"})  # a field of runs only
    assert error["loc"] == ["body", "state", "query"] and "unknown field" in error["msg"]
    [error] = errors("runs", {"group_by": ["params.lr", "params.'\\udfff'"]})
    assert error["loc"] == ["body", "state", "group_by", 1] and error["msg"].startswith("position 7:")
    saved = api.client.post(
        _url(pid), json={"name": "ok", "page": "runs", "state": STATE}, headers=api.h(meg)
    ).json()
    # an update is checked as a new view is, and a refused one leaves the stored state as it was
    answer = api.client.patch(
        _url(pid, saved["id"]), json={"state": {"query": "created <= 9999-12-31"}}, headers=api.h(meg)
    )
    assert answer.status_code == 422 and answer.json()["errors"][0]["loc"] == ["body", "state", "query"]
    assert (
        api.client.get(_url(pid, saved["id"]), headers=api.h(meg)).json()["state"]["query"] == STATE["query"]
    )


def test_plain_words_are_the_pages_name_search(api: Api) -> None:
    """The pages' search boxes read text without operators as a name search (`#7` as an id): a view
    saving such a query is one its page can show."""
    meg = api.user("meg")
    pid = _project_id(api, meg)
    for page in ("runs", "experiments"):
        for i, text in enumerate(("probe", "lr sweep", "#7", "42", "ünïcode wörds")):
            answer = api.client.post(
                _url(pid),
                json={"name": f"{page}{i}", "page": page, "state": {"query": text}},
                headers=api.h(meg),
            )
            assert answer.status_code == 201, (page, text, answer.text)
    answer = api.client.post(
        _url(pid),
        json={"name": "e", "page": "experiments", "state": {"query": "probe = 1"}},
        headers=api.h(meg),
    )
    assert answer.status_code == 422 and answer.json()["errors"][0]["loc"] == ["body", "state", "query"]


def test_the_runs_box_reads_text_as_the_sdk_does() -> None:
    """backend.query.box_query and the SDK's effective_query (the dashboard's rule, in Python) agree."""
    from backend.query import box_query
    from reasonlab_sdk.views import effective_query

    for text in (
        "",
        "  ",
        "probe",
        "lr sweep",
        "#7",
        "42",
        "name = 'x'",
        "a and b",
        "it's",
        "ünï",
        "(x",
        "#12a",
    ):
        assert box_query(text) == effective_query(text), text
