"""The claim block of reports (backend/reports/blocks/claim.py): validated with field paths, a claim of
another project (or none) shown as not visible, a frozen block that keeps its evaluation while more runs
end and a live one that follows them, a frozen evaluation that cannot be edited through the draft, and
the HTML, Markdown and LaTeX exports holding the verdict and the numbers, escaped."""

from __future__ import annotations

import io
import zipfile
from html.parser import HTMLParser
from typing import Any

import numpy as np
import pytest

from tests.backend.conftest import Api
from tests.backend.test_claims import _create as _create_claim
from tests.backend.test_claims import _end, _get, _runs
from tests.backend.test_reports import _create, _publish, _save

pytestmark = pytest.mark.dialect_matrix  # the claims' statistics are SQL: SQLite and Postgres

A = np.array([0.61, 0.64, 0.58, 0.66, 0.60, 0.63])
LIFT = np.array([0.05, 0.07, 0.04, 0.06, 0.08, 0.05])
NAME = "shared <b>beats</b> private"  # a claim's name may hold < and >
SECTION = "§4.2 <script>alert(1)</script> & 100% $x_1$ #{}~^\\"


def _claim_block(block_id: str, claim_id: int | None, mode: str = "frozen", **kw: Any) -> dict[str, Any]:
    block: dict[str, Any] = {"id": block_id, "type": "claim", "mode": mode, **kw}
    if claim_id is not None:
        block["claim_id"] = claim_id
    return block


def _data(api: Api, report: dict[str, Any], token: str | None = None) -> dict[str, Any]:
    response = api.client.get(f"/api/v1/reports/{report['id']}/data", headers=api.h(token))
    assert response.status_code == 200, response.text
    return dict(response.json())


def _planted(api: Api, seeds: int = 4) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """A claim over two arms of six seeds each, the first ``seeds`` of each arm ended."""
    ref, arm = _runs(api, 0.1, list(range(6))), _runs(api, 0.2, list(range(6)))
    for r, x in list(zip(ref, A, strict=True))[:seeds]:
        _end(api, r["id"], [(1, 0.1), (10, float(x))])
    for r, x in list(zip(arm, A + LIFT, strict=True))[:seeds]:
        _end(api, r["id"], [(1, 0.1), (10, float(x))])
    claim = _create_claim(
        api,
        NAME,
        section=SECTION,
        arms=[
            {"name": "private | <i>a</i>", "query": "params.train.lr = 0.1"},
            {"name": "shared", "query": "params.train.lr = 0.2"},
        ],
    )
    return claim, ref, arm


def test_the_claim_block_is_validated_with_field_paths(api: Api) -> None:
    claim, _, _ = _planted(api, seeds=0)
    cases: list[tuple[dict[str, Any], list[Any]]] = [
        (_claim_block("a", None), ["body", "blocks", 0, "claim", "claim_id"]),
        (_claim_block("a", 0), ["body", "blocks", 0, "claim", "claim_id"]),
        (_claim_block("a", claim["id"], mode="later"), ["body", "blocks", 0, "claim", "mode"]),
        (_claim_block("a", claim["id"], colour="red"), ["body", "blocks", 0, "claim", "colour"]),
        (
            _claim_block("a", claim["id"], cutoff={"at": "2026-01-01T00:00:00Z", "seal": "x" * 65}),
            ["body", "blocks", 0, "claim", "cutoff", "seal"],
        ),
    ]
    for block, loc in cases:
        response = _create(api, [block])
        assert response.status_code == 422, (block, response.text)
        assert next(e["loc"] for e in response.json()["errors"]) == loc, response.json()
    # a cut-off taken for one claim cannot be moved onto another
    other = _create_claim(api, "another claim")
    report = _create(api, [_claim_block("a", claim["id"])]).json()
    moved = report["blocks"][0] | {"claim_id": other["id"]}
    response = _save(api, report, [moved])
    assert response.status_code == 422 and response.json()["errors"][0]["loc"] == [
        "body",
        "blocks",
        0,
        "claim",
    ]


def test_a_claim_of_another_project_or_none_is_not_visible(api: Api) -> None:
    ozzie = api.user("ozzie", project="elsewhere")
    projects = api.client.get("/api/v1/projects", headers=api.h(ozzie)).json()
    theirs_pid = next(p["id"] for p in projects if p["name"] == "elsewhere")
    theirs = api.client.post(
        f"/api/v1/projects/{theirs_pid}/claims",
        json={
            "name": "their secret claim",
            "definition": {
                "section": "their section",
                "arms": [{"name": "x", "query": "params.a = 1"}, {"name": "y", "query": "params.a = 2"}],
                "metric": "acc",
                "direction": "greater",
            },
        },
        headers=api.h(ozzie),
    )
    assert theirs.status_code == 201, theirs.text
    blocks = [
        _claim_block("theirs", theirs.json()["id"]),
        _claim_block("theirs_live", theirs.json()["id"], mode="live"),
        _claim_block("none", 999_999),
    ]
    report = _create(api, blocks).json()
    assert report["blocks"][0]["cutoff"]["claim"] is None
    data = _data(api, report)
    for block_id in ("theirs", "theirs_live", "none"):
        assert data[block_id]["visible"] is False and data[block_id]["detail"] is None, data[block_id]
    html = api.client.get(
        f"/api/v1/reports/{report['id']}/revisions/{_publish(api, report)['number']}/export", headers=api.h()
    ).text
    assert html.count("not visible to you") == 3
    assert "their secret claim" not in html and "their section" not in html


def test_a_frozen_claim_keeps_its_evaluation_while_more_runs_end_and_a_live_one_follows(api: Api) -> None:
    claim, ref, arm = _planted(api, seeds=4)
    blocks = [_claim_block("frozen", claim["id"]), _claim_block("live", claim["id"], mode="live")]
    report = _create(api, blocks).json()
    assert report["blocks"][1]["cutoff"] is None
    before = _data(api, report)
    frozen = before["frozen"]["detail"]
    assert frozen["evaluation"] == _get(api, claim["id"])["evaluation"] | {
        "evaluated_at": frozen["evaluation"]["evaluated_at"]
    }
    assert (
        frozen["name"] == NAME
        and frozen["definition"]["section"] == SECTION
        and frozen["claim_id"] == claim["id"]
    )
    assert [a["n"] for a in frozen["evaluation"]["arms"]] == [4, 4]
    assert before["live"]["detail"]["evaluation"]["arms"] == frozen["evaluation"]["arms"]
    number = _publish(api, report)["number"]
    published = api.client.get(f"/api/v1/reports/{report['id']}/revisions/{number}", headers=api.h()).json()

    # two more seeds of each arm end: the live block and the claim follow, the frozen block does not
    for r, x in list(zip(ref, A, strict=True))[4:]:
        _end(api, r["id"], [(1, 0.1), (10, float(x))])
    for r, x in list(zip(arm, A + LIFT, strict=True))[4:]:
        _end(api, r["id"], [(1, 0.1), (10, float(x))])
    after = _data(api, report)
    assert after["frozen"] == before["frozen"]
    assert [a["n"] for a in after["live"]["detail"]["evaluation"]["arms"]] == [6, 6]
    now = _get(api, claim["id"])["evaluation"]
    assert after["live"]["detail"]["evaluation"]["comparisons"] == now["comparisons"]
    assert after["live"]["detail"]["evaluation"]["comparisons"] != frozen["evaluation"]["comparisons"]
    again = api.client.get(f"/api/v1/reports/{report['id']}/revisions/{number}", headers=api.h()).json()
    assert again["data"]["frozen"] == published["data"]["frozen"]
    assert again["data"]["live"]["detail"]["evaluation"]["arms"][0]["n"] == 6  # a live block of a revision

    # the draft sent back unchanged keeps its cut-off; an edited evaluation is never shown
    saved = _save(api, report, report["blocks"]).json()
    assert _data(api, saved)["frozen"] == before["frozen"]
    forged = [dict(b) for b in saved["blocks"]]
    cutoff = forged[0]["cutoff"]
    cutoff["claim"]["evaluation"]["verdict"] = "contradicted"
    forged_report = _save(api, saved, forged)
    assert forged_report.status_code == 200, forged_report.text
    shown = _data(api, forged_report.json())["frozen"]
    assert shown["visible"] is False and "does not match its seal" in shown["detail"]["problem"]
    # dropping the cut-off freezes the claim again, now
    refrozen = [{k: v for k, v in forged[0].items() if k != "cutoff"}, forged[1]]
    latest = _save(api, forged_report.json(), refrozen).json()
    assert [a["n"] for a in _data(api, latest)["frozen"]["detail"]["evaluation"]["arms"]] == [6, 6]


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts = 0
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.scripts += tag == "script"

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_the_exports_hold_the_verdict_and_the_numbers_escaped(api: Api) -> None:
    claim, _, _ = _planted(api, seeds=6)
    ev = _get(api, claim["id"])["evaluation"]
    assert ev["verdict"] == "supported"
    (c,) = ev["comparisons"]
    report = _create(api, [_claim_block("c", claim["id"])]).json()
    url = f"/api/v1/reports/{report['id']}/revisions/{_publish(api, report)['number']}/export"

    html = api.client.get(url, params={"format": "html"}, headers=api.h()).text
    page = _Text()
    page.feed(html)
    text = "".join(page.text)
    assert page.scripts == 0 and "<b>beats" not in html and "&lt;b&gt;beats&lt;/b&gt;" in html
    assert NAME in text and SECTION in text and "private | <i>a</i>" in text
    assert "supported" in text and "pre-registration" in text and "not locked" in text
    assert f"version 1 (sha256 {ev['hash'][:12]})" in text
    for value in (ev["arms"][0]["mean"], ev["arms"][1]["ci_low"], c["effect"], c["ci_high"], c["p_value"]):
        assert f"<td>{value:.6g}</td>" in html, value
    assert (
        f"<td>{c['p_adjusted']:.6g}</td>" in html
        and "<td>shared vs private | &lt;i&gt;a&lt;/i&gt;</td>" in html
    )

    md = zipfile.ZipFile(io.BytesIO(api.client.get(url, params={"format": "md"}, headers=api.h()).content))
    body = md.read("report.md").decode()
    assert "<script>" not in body and "<b>" not in body and "&lt;script>alert(1)&lt;/script>" in body
    assert "| verdict | supported |" in body and f"| {c['effect']:.6g} |" in body
    assert "private \\| &lt;i>a&lt;/i>" in body  # a pipe in a cell does not split it
    assert f"| {ev['arms'][1]['mean']:.6g} |" in body and "| not locked |" in body

    tex_zip = zipfile.ZipFile(
        io.BytesIO(api.client.get(url, params={"format": "latex"}, headers=api.h()).content)
    )
    tex = tex_zip.read("report.tex").decode()
    assert "supported" in tex and f"{c['p_value']:.6g}" in tex
    assert "100\\% \\$x\\_1\\$ \\#\\{\\}\\textasciitilde{}\\textasciicircum{}\\textbackslash{}" in tex
    assert tex.count("{") - tex.count("\\{") == tex.count("}") - tex.count("\\}")
    assert "\\begin{tabular}" in tex and f"{ev['arms'][0]['mean']:.6g}" in tex
