"""Reports (backend/reports/): the block union validated with field paths, frozen blocks that keep their
data while their runs go on or are retried, 409 on a stale edit, revisions, comments and reviews in the
activity feed, blocks over another project's runs, share links (one revision, expiring, revocable,
hiding names), and exports parsed back."""

from __future__ import annotations

import io
import json
import re
import zipfile
from datetime import timedelta
from html.parser import HTMLParser
from typing import Any
from xml.etree import ElementTree

import pytest
from markdown_it import MarkdownIt
from sqlalchemy import update

from backend.db import get_engine, session_factory, session_scope, utcnow
from backend.models import ReportShare
from tests.backend.conftest import Api

DIAGNOSTIC_RESULT = {"final_loss": 1.0, "initial_loss": 2.0, "steps": 1, "parameters": 3}


def _project_id(api: Api, token: str | None = None) -> int:
    projects = api.client.get("/api/v1/projects", headers=api.h(token)).json()
    return next(p["id"] for p in projects if p["name"] == "default")


def _run(api: Api, name: str = "exp", token: str | None = None) -> int:
    response = api.submit({}, name=name, token=token)
    assert response.status_code == 201, response.text
    return int(response.json()["runs"][0]["id"])


def _points(api: Api, run_id: int, steps: range, key: str = "loss", scale: float = 1.0) -> None:
    points = [{"key": key, "step": s, "value": scale * (100 - s)} for s in steps]
    response = api.client.post(f"/api/v1/runs/{run_id}/metrics", json={"points": points}, headers=api.worker)
    assert response.status_code == 200, response.text


def _figure(block_id: str, run_ids: list[int], mode: str = "frozen", **kw: Any) -> dict[str, Any]:
    return {
        "id": block_id,
        "type": "figure",
        "title": "loss",
        "source": {"run_ids": run_ids},
        "metrics": ["loss"],
        "mode": mode,
        **kw,
    }


def _create(api: Api, blocks: list[dict[str, Any]], token: str | None = None, title: str = "Finding") -> Any:
    return api.client.post(
        f"/api/v1/projects/{_project_id(api, token)}/reports",
        json={"title": title, "blocks": blocks},
        headers=api.h(token),
    )


def _save(
    api: Api, report: dict[str, Any], blocks: list[dict[str, Any]], token: str | None = None, **kw: Any
) -> Any:
    body = {
        "base_version": kw.get("base_version", report["version"]),
        "title": kw.get("title", report["title"]),
        "blocks": blocks,
    }
    return api.client.put(f"/api/v1/reports/{report['id']}", json=body, headers=api.h(token))


def _publish(api: Api, report: dict[str, Any], token: str | None = None) -> dict[str, Any]:
    response = api.client.post(
        f"/api/v1/reports/{report['id']}/publish",
        json={"base_version": report["version"]},
        headers=api.h(token),
    )
    assert response.status_code == 201, response.text
    return response.json()


@pytest.mark.heavy
def test_the_block_union_is_validated_with_field_paths(api: Api) -> None:
    run_id = _run(api)
    cases: list[tuple[dict[str, Any], list[Any]]] = [
        (
            {"id": "a", "type": "figure", "source": {"run_ids": [run_id]}, "metrics": []},
            ["body", "blocks", 0, "figure", "metrics"],
        ),
        ({"id": "a", "type": "chart", "text": "x"}, ["body", "blocks", 0]),
        (
            {"id": "a", "type": "heading", "text": "x", "colour": "red"},
            ["body", "blocks", 0, "heading", "colour"],
        ),
        ({"id": "a", "type": "heading", "text": "x", "level": 7}, ["body", "blocks", 0, "heading", "level"]),
        ({"id": "a b", "type": "markdown", "text": "x"}, ["body", "blocks", 0, "markdown", "id"]),
        (
            {
                "id": "a",
                "type": "run_table",
                "source": {"query": "status = 'x'", "run_ids": [run_id]},
                "columns": ["name"],
            },
            ["body", "blocks", 0, "run_table", "source"],
        ),
        (
            {"id": "a", "type": "kind_view", "source": {"run_ids": [run_id]}, "result_kind": "no_such_kind"},
            ["body", "blocks", 0, "kind_view", "result_kind"],
        ),
        (
            {"id": "a", "type": "figure", "source": {"query": "params.lr >>= 1"}, "metrics": ["loss"]},
            ["body", "blocks", 0, "figure", "source", "query"],
        ),
    ]
    for block, loc in cases:
        response = _create(api, [block])
        assert response.status_code == 422, (block, response.text)
        assert next(e["loc"] for e in response.json()["errors"]) == loc, response.json()
    twice = _create(
        api, [{"id": "a", "type": "markdown", "text": "x"}, {"id": "a", "type": "markdown", "text": "y"}]
    )
    assert twice.status_code == 422 and twice.json()["errors"][0]["loc"] == ["body", "blocks"]
    # the OpenAPI document names the union, a schema per block type, discriminated on type
    document = api.client.get("/api/v1/openapi.json").json()
    blocks = document["components"]["schemas"]["ReportCreate"]["properties"]["blocks"]["items"]
    assert set(blocks["discriminator"]["mapping"]) == {
        "heading",
        "markdown",
        "figure",
        "run_table",
        "examples_table",
        "kind_view",
        "callout",
        "claim",
    }


def test_a_frozen_figure_keeps_its_data_while_its_runs_go_on_and_are_retried(api: Api) -> None:
    frozen_run, live_run = _run(api, "a"), _run(api, "b")
    _points(api, frozen_run, range(0, 50))
    _points(api, live_run, range(0, 50))
    report = _create(
        api,
        [
            _figure("f", [frozen_run]),
            _figure("l", [live_run], mode="live"),
            {
                "id": "t",
                "type": "run_table",
                "source": {"run_ids": [frozen_run]},
                "columns": ["name", "metrics.loss"],
            },
        ],
    ).json()
    cutoff = report["blocks"][0]["cutoff"]
    assert cutoff["runs"][0]["run_id"] == frozen_run and cutoff["runs"][0]["steps"] == {"loss": 49}
    assert report["blocks"][1]["cutoff"] is None  # a live block has none
    before = api.client.get(f"/api/v1/reports/{report['id']}/data", headers=api.h()).json()
    assert before["f"]["live"] is False and before["f"]["runs"][0]["steps"] == {"loss": [0, 49]}
    assert before["t"]["rows"] == [[frozen_run, None, 51.0]]
    revision = _publish(api, report)

    _points(api, frozen_run, range(50, 120))  # the run goes on
    _points(api, live_run, range(50, 120))
    after = api.client.get(f"/api/v1/reports/{report['id']}/data", headers=api.h()).json()
    assert after["f"]["series"] == before["f"]["series"] and after["t"]["rows"] == before["t"]["rows"]
    assert after["l"]["runs"][0]["steps"] == {"loss": [0, 119]}  # the live one shows it, as of now
    # a retry rewrites the steps the cut-off covers: the revision still shows what it published
    _points(api, frozen_run, range(0, 50), scale=-3.0)
    published = api.client.get(
        f"/api/v1/reports/{report['id']}/revisions/{revision['number']}", headers=api.h()
    ).json()
    assert published["data"]["f"]["series"] == before["f"]["series"]
    assert published["data"]["t"]["rows"] == before["t"]["rows"]
    assert published["content_hash"] == revision["content_hash"] and len(revision["content_hash"]) == 64
    assert published["data"]["l"]["live"] is True and published["data"]["l"]["runs"][0]["steps"] == {
        "loss": [0, 119]
    }


def test_a_frozen_query_keeps_its_runs_when_the_run_set_changes(api: Api) -> None:
    first = _run(api, "q")
    _points(api, first, range(10))
    report = _create(
        api, [{"id": "f", "type": "figure", "source": {"query": "name = 'exp-q'"}, "metrics": ["loss"]}]
    )
    assert report.status_code == 201, report.text
    report = report.json()
    assert [r["run_id"] for r in report["blocks"][0]["cutoff"]["runs"]] == []  # runs have no name yet
    api.client.patch(f"/api/v1/runs/{first}", json={"name": "exp-q"}, headers=api.h())
    refreeze = [{**report["blocks"][0], "cutoff": None}]
    saved = _save(api, report, refreeze).json()
    assert [r["run_id"] for r in saved["blocks"][0]["cutoff"]["runs"]] == [first]
    second = _run(api, "q2")
    api.client.patch(f"/api/v1/runs/{second}", json={"name": "exp-q"}, headers=api.h())
    data = api.client.get(f"/api/v1/reports/{saved['id']}/data", headers=api.h()).json()
    assert [r["run_id"] for r in data["f"]["runs"]] == [first]


def test_an_edit_on_a_stale_version_is_a_409_that_says_what_changed(api: Api) -> None:
    meg = api.user("meg")
    report = _create(api, [{"id": "m", "type": "markdown", "text": "first"}], token=meg).json()
    saved = _save(api, report, [{"id": "m", "type": "markdown", "text": "second"}], token=meg)
    assert saved.status_code == 200 and saved.json()["version"] == 2
    stale = _save(
        api,
        report,
        [{"id": "m", "type": "markdown", "text": "mine"}, {"id": "n", "type": "markdown", "text": "new"}],
    )
    assert stale.status_code == 409, stale.text
    errors = stale.json()["errors"]
    assert errors[0] == {"loc": ["body", "base_version"], "msg": "current version is 2", "type": "stale"}
    assert {tuple(e["loc"]) for e in errors[1:]} == {("blocks", "m"), ("blocks", "n")}
    assert (
        api.client.get(f"/api/v1/reports/{report['id']}", headers=api.h()).json()["blocks"][0]["text"]
        == "second"
    )
    assert (
        api.client.post(
            f"/api/v1/reports/{report['id']}/publish", json={"base_version": 1}, headers=api.h()
        ).status_code
        == 409
    )


def test_comments_anchor_to_blocks_reviews_attach_to_revisions_and_the_feed_shows_both(api: Api) -> None:
    meg, vic = api.user("meg"), api.user("vic", role="viewer")
    report = _create(api, [{"id": "intro", "type": "markdown", "text": "x"}], token=meg).json()
    url = f"/api/v1/reports/{report['id']}"
    assert (
        api.client.post(
            f"{url}/comments", json={"block_id": "intro", "body": "why?"}, headers=api.h(vic)
        ).status_code
        == 403
    )
    nowhere = api.client.post(f"{url}/comments", json={"block_id": "gone", "body": "?"}, headers=api.h(meg))
    assert nowhere.status_code == 422 and nowhere.json()["errors"][0]["loc"] == ["body", "block_id"]
    posted = api.client.post(
        f"{url}/comments", json={"block_id": "intro", "body": "why?"}, headers=api.h(meg)
    )
    assert posted.status_code == 201 and posted.json()["block_id"] == "intro"
    assert [c["body"] for c in api.client.get(f"{url}/comments", headers=api.h(vic)).json()] == ["why?"]
    assert (
        api.client.post(f"{url}/revisions/1/reviews", json={"state": "approved"}, headers=api.h()).status_code
        == 404
    )
    revision = _publish(api, report, token=meg)
    approved = api.client.post(
        f"{url}/revisions/{revision['number']}/reviews", json={"state": "approved"}, headers=api.h()
    )
    assert approved.status_code == 201 and approved.json()["revision"] == 1
    feed = api.client.get(f"/api/v1/projects/{report['project_id']}/activity", headers=api.h(vic)).json()
    assert {"report_created", "report_commented", "report_published", "report_reviewed"} <= {
        a["type"] for a in feed
    }


def test_a_block_over_another_projects_runs_shows_them_as_not_visible(api: Api) -> None:
    ozzie = api.user("ozzie", project="elsewhere")
    theirs = api.submit({}, project="elsewhere", token=ozzie).json()["runs"][0]["id"]
    _points(api, theirs, range(10))
    mine = _run(api)
    report = _create(api, [_figure("theirs", [theirs]), _figure("both", [theirs, mine])]).json()
    assert report["blocks"][0]["cutoff"]["runs"] == []
    data = api.client.get(f"/api/v1/reports/{report['id']}/data", headers=api.h()).json()
    assert (
        data["theirs"]["visible"] is False
        and data["theirs"]["hidden_runs"] == 1
        and data["theirs"]["series"] == []
    )
    assert data["both"]["visible"] is True and [r["run_id"] for r in data["both"]["runs"]] == [mine]
    html = api.client.get(
        f"/api/v1/reports/{report['id']}/revisions/{_publish(api, report)['number']}/export", headers=api.h()
    ).text
    assert "not visible to you" in html and f"run {theirs}" not in html
    # and an outsider cannot reach the report at all
    assert api.client.get(f"/api/v1/reports/{report['id']}", headers=api.h(ozzie)).status_code == 404


def _share(api: Api, report: dict[str, Any], number: int, **body: Any) -> dict[str, Any]:
    response = api.client.post(
        f"/api/v1/reports/{report['id']}/revisions/{number}/shares", json=body, headers=api.h()
    )
    assert response.status_code == 201, response.text
    return response.json()


def test_a_share_link_opens_one_revision_expires_is_revocable_and_hides_names(api: Api) -> None:
    run_id = _run(api)
    _points(api, run_id, range(20))
    report = _create(api, [{"id": "m", "type": "markdown", "text": "v1"}, _figure("f", [run_id])]).json()
    first = _publish(api, report)
    report = _save(api, report, [{"id": "m", "type": "markdown", "text": "v2"}]).json()
    _publish(api, report)
    link = _share(api, report, first["number"])
    anonymous = api.client.get(f"/api/v1/shared/reports/{link['token']}")
    assert anonymous.status_code == 200, anonymous.text
    shared = anonymous.json()
    assert shared["number"] == 1 and shared["blocks"][0]["text"] == "v1" and shared["author"] == "admin"
    assert shared["data"]["f"]["series"][0]["points"][-1] == [19, 81.0]
    # the token opens nothing else: not the report, its draft, its runs
    bearer = {"Authorization": f"Bearer {link['token']}"}
    for path in (
        f"/api/v1/reports/{report['id']}",
        f"/api/v1/runs/{run_id}",
        f"/api/v1/reports/{report['id']}/revisions/2",
    ):
        assert api.client.get(path, headers=bearer).status_code == 401
        assert api.client.get(path, params={"token": link["token"]}).status_code == 401
    # the token is stored hashed
    factory = session_factory(get_engine(api.settings.database_url))
    with session_scope(factory) as session:
        stored = session.get(ReportShare, link["id"])
        assert stored is not None and link["token"] not in (stored.token_hash, stored.prefix)
    blind = _share(api, report, 2, hide_authors=True)
    hidden = api.client.get(f"/api/v1/shared/reports/{blind['token']}").json()
    assert hidden["author"] is None and "admin" not in json.dumps(hidden)
    # revoked
    assert api.client.delete(f"/api/v1/reports/{report['id']}/shares/{link['id']}", headers=api.h()).json()[
        "revoked_at"
    ]
    assert api.client.get(f"/api/v1/shared/reports/{link['token']}").status_code == 404
    # expired
    with session_scope(factory) as session:
        session.execute(
            update(ReportShare)
            .where(ReportShare.id == blind["id"])
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    assert api.client.get(f"/api/v1/shared/reports/{blind['token']}").status_code == 404
    assert api.client.get("/api/v1/shared/reports/rlshare_not-a-real-token").status_code == 404


class _Page(HTMLParser):
    """What a browser would fetch or run from the exported page: every URL attribute and script."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.scripts = 0
        self.handlers: list[str] = []
        self.csp = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self.scripts += 1
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "action", "srcset"):
                self.urls.append(value or "")
            if name.startswith("on"):
                self.handlers.append(name)
        if tag == "meta" and dict(attrs).get("http-equiv") == "Content-Security-Policy":
            self.csp = dict(attrs).get("content") or ""


XSS = "<script>alert(1)</script><img src=x onerror=alert(2)>[x](javascript:alert(3))"


def test_exports_are_produced_and_parse_back(api: Api) -> None:
    run_id = _run(api)
    _points(api, run_id, range(30))
    api.client.post(
        f"/api/v1/runs/{run_id}/results",
        json={"kind": "diagnostic", "payload": DIAGNOSTIC_RESULT},
        headers=api.worker,
    )
    blocks = [
        {"id": "h", "type": "heading", "text": f"Heading {XSS}"},
        {
            "id": "m",
            "type": "markdown",
            "text": f"Loss falls as $L(t) \\propto t^{{-1}}$. {XSS} [ok](https://example.org)",
        },
        _figure("f", [run_id], title=f"fig {XSS}"),
        {
            "id": "t",
            "type": "run_table",
            "source": {"run_ids": [run_id]},
            "columns": ["name", "metrics.loss"],
            "title": XSS,
        },
        {"id": "k", "type": "kind_view", "source": {"run_ids": [run_id]}, "result_kind": "diagnostic"},
        {"id": "c", "type": "callout", "tone": "warning", "text": XSS},
    ]
    report = _create(api, blocks, title=f"Report {XSS}").json()
    number = _publish(api, report)["number"]
    url = f"/api/v1/reports/{report['id']}/revisions/{number}/export"

    html = api.client.get(url, params={"format": "html"}, headers=api.h())
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    assert "attachment" in html.headers["content-disposition"]
    page = _Page()
    page.feed(html.text)
    assert page.scripts == 0 and page.handlers == [] and "default-src 'none'" in page.csp
    # offline: nothing to fetch but the one safe link a reader may follow
    assert page.urls == ["https://example.org"], page.urls
    assert "javascript:" not in html.text.replace("[x](javascript:alert(3))", "")
    svgs = re.findall(r"<svg.*?</svg>", html.text, re.DOTALL)
    assert len(svgs) == 1
    svg = ElementTree.fromstring(svgs[0])
    ns = "{http://www.w3.org/2000/svg}"
    titles = [t.text or "" for t in svg.iter(f"{ns}title")]
    assert any(f"run {run_id}, loss, steps 0-29 (30 points)" in t for t in titles)  # what hovering says
    assert "<td>71</td>" in html.text  # the run table's frozen loss (100 - 29), text to copy
    assert "final_loss" in html.text

    md = zipfile.ZipFile(io.BytesIO(api.client.get(url, params={"format": "md"}, headers=api.h()).content))
    assert sorted(md.namelist()) == ["figures/figure-1.svg", "report.md"]
    text = md.read("report.md").decode()
    assert "](figures/figure-1.svg)" in text and "$L(t) \\propto t^{-1}$" in text
    # a viewer that renders raw HTML in Markdown finds none: no script, no element from the text
    rendered = MarkdownIt("commonmark", {"html": True}).render(text)
    viewer = _Page()
    viewer.feed(rendered)
    assert viewer.scripts == 0 and viewer.handlers == []
    assert sorted(viewer.urls) == ["figures/figure-1.svg", "https://example.org"], viewer.urls
    ElementTree.fromstring(md.read("figures/figure-1.svg"))

    latex = zipfile.ZipFile(
        io.BytesIO(api.client.get(url, params={"format": "latex"}, headers=api.h()).content)
    )
    assert sorted(latex.namelist()) == ["figures/figure-1.svg", "figures/figure-1.tex", "report.tex"]
    tex = latex.read("report.tex").decode()
    assert "\\input{figures/figure-1.tex}" in tex and "$L(t) \\propto t^{-1}$" in tex
    assert "\\begin{tikzpicture}" in latex.read("figures/figure-1.tex").decode()
    assert tex.count("{") == tex.count("}")  # the escaped text leaves LaTeX's groups balanced

    bad = api.client.get(url, params={"format": "pdf"}, headers=api.h())
    assert bad.status_code == 422 and bad.json()["errors"][0]["loc"] == ["query", "format"]


def test_only_the_author_or_an_admin_deletes_and_viewers_only_read(api: Api) -> None:
    meg, mo, vic = api.user("meg"), api.user("mo"), api.user("vic", role="viewer")
    report = _create(api, [], token=meg).json()
    assert _create(api, [], token=vic).status_code == 403
    assert api.client.get(f"/api/v1/reports/{report['id']}", headers=api.h(vic)).json()["can_edit"] is False
    assert _save(api, report, [], token=vic).status_code == 403
    assert api.client.delete(f"/api/v1/reports/{report['id']}", headers=api.h(mo)).status_code == 403
    assert api.client.delete(f"/api/v1/reports/{report['id']}", headers=api.h(meg)).status_code == 204
    assert api.client.get(f"/api/v1/reports/{report['id']}", headers=api.h(meg)).status_code == 404


def _examples(api: Api, run_id: int, start: int, stop: int) -> None:
    rows = [
        {"idx": i, "key": f"item-{i:03d}", "data": {"item": i, "grade": {"ok": i % 2 == 0}}}
        for i in range(start, stop)
    ]
    response = api.client.post(
        f"/api/v1/runs/{run_id}/examples", json={"table": "gradings", "rows": rows}, headers=api.worker
    )
    assert response.status_code == 200, response.text


def test_a_frozen_per_example_table_keeps_its_rows_and_a_live_one_follows(api: Api) -> None:
    run_id = _run(api)
    _examples(api, run_id, 0, 3)
    table = {
        "type": "examples_table",
        "source": {"run_ids": [run_id]},
        "table": "gradings",
        "columns": ["item", "grade.ok"],
    }
    report = _create(api, [{"id": "frozen", **table}, {"id": "live", **table, "mode": "live"}]).json()
    assert report["blocks"][0]["cutoff"]["runs"][0]["steps"] == {"rows:gradings": 3}
    _examples(api, run_id, 3, 5)
    data = api.client.get(f"/api/v1/reports/{report['id']}/data", headers=api.h()).json()
    assert data["frozen"]["columns"] == ["run", "key", "item", "grade.ok"]
    assert data["frozen"]["rows"] == [[run_id, f"item-{i:03d}", i, i % 2 == 0] for i in range(3)]
    assert [r[2] for r in data["live"]["rows"]] == [0, 1, 2, 3, 4]
