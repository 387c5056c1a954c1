"""Naming and renaming runs: ``PATCH /runs/{id}`` with ``{"name": ...}`` by a member of the
run's project; the name in RunPublic, the runs list, the experiment's runs table (its kept encoding rebuilt)
and a "renamed" row of the activity feed. On SQLite and Postgres (the ``api`` fixture)."""

from __future__ import annotations

from typing import Any

import pytest

from backend.experiments import table
from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)


def _patch(api: Api, run_id: int, body: dict[str, Any], token: str | None = None) -> Any:
    return api.client.patch(f"/api/v1/runs/{run_id}", json=body, headers=api.h(token))


def _feed(api: Api, project_id: int) -> list[dict[str, Any]]:
    r = api.client.get(f"/api/v1/projects/{project_id}/activity", headers=api.h())
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def test_a_member_names_renames_and_clears_a_run(api: Api) -> None:
    member = api.user("meg", role="member")
    exp = api.submit({}, sweep={"grid": {"train.lr": [0.1, 0.01]}}).json()
    run_id = exp["runs"][0]["id"]
    assert exp["runs"][0]["name"] is None

    named = _patch(api, run_id, {"name": "  baseline lr 0.1  "}, member)
    assert named.status_code == 200, named.text
    assert named.json()["name"] == "baseline lr 0.1"  # trimmed
    assert api.client.get(f"/api/v1/runs/{run_id}", headers=api.h()).json()["name"] == "baseline lr 0.1"
    listed = api.client.get("/api/v1/runs", params={"experiment_id": exp["id"]}, headers=api.h()).json()
    assert {r["id"]: r["name"] for r in listed["items"]} == {
        run_id: "baseline lr 0.1",
        exp["runs"][1]["id"]: None,
    }

    assert _patch(api, run_id, {"name": "lr 0.1 (kept)"}, member).json()["name"] == "lr 0.1 (kept)"
    assert _patch(api, run_id, {"name": "   "}, member).json()["name"] is None  # blank clears
    assert _patch(api, run_id, {"name": "again"}, member).json()["name"] == "again"
    assert _patch(api, run_id, {"name": None}, member).json()["name"] is None  # null clears
    assert _patch(api, run_id, {}, member).json()["name"] is None  # nothing asked: nothing changes

    renamed = [a for a in _feed(api, exp["project_id"]) if a["type"] == "renamed"]
    messages = sorted(a["message"] for a in renamed)
    assert len(renamed) == 5, messages
    assert all(a["run_id"] == run_id and a["experiment_id"] == exp["id"] for a in renamed)
    assert f"run {run_id} named 'baseline lr 0.1'" in messages
    assert f"run {run_id} renamed from 'baseline lr 0.1' to 'lr 0.1 (kept)'" in messages
    assert f"run {run_id} unnamed (was 'again')" in messages
    assert {a["actor"] for a in renamed} == {"meg"}

    # the same name again is no change: no feed row
    _patch(api, run_id, {"name": "again"}, member)
    _patch(api, run_id, {"name": "again "}, member)
    assert len([a for a in _feed(api, exp["project_id"]) if a["type"] == "renamed"]) == 6


def test_a_finished_run_can_be_named(api: Api) -> None:
    run_id = api.submit({}).json()["runs"][0]["id"]
    assert api.client.post(f"/api/v1/runs/{run_id}/cancel", headers=api.h()).status_code == 200
    r = _patch(api, run_id, {"name": "never ran"})
    assert r.status_code == 200 and r.json()["name"] == "never ran" and r.json()["status"] == "cancelled"


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("x" * 201, "at most 200"),
        ("two\nlines", "control characters"),
        ("tab\there", "control characters"),
        (42, "string"),
        (["a"], "string"),
    ],
)
def test_bad_names_are_422_naming_the_field(api: Api, name: Any, why: str) -> None:
    run_id = api.submit({}).json()["runs"][0]["id"]
    r = _patch(api, run_id, {"name": name})
    assert r.status_code == 422, r.text
    errors = r.json()["errors"]
    assert ["body", "name"] in [e["loc"] for e in errors], errors
    assert why in r.text, r.text
    assert api.client.get(f"/api/v1/runs/{run_id}", headers=api.h()).json()["name"] is None


def test_two_hundred_characters_after_trimming_are_accepted(api: Api) -> None:
    run_id = api.submit({}).json()["runs"][0]["id"]
    r = _patch(api, run_id, {"name": "  " + "é" * 200 + "  "})
    assert r.status_code == 200, r.text
    assert r.json()["name"] == "é" * 200


def test_viewers_outsiders_and_run_tokens_cannot_rename(api: Api) -> None:
    viewer = api.user("vic", role="viewer")
    outsider = api.user("ozzie", project="elsewhere")
    run_id = api.submit({}).json()["runs"][0]["id"]
    assert _patch(api, run_id, {"name": "v"}, viewer).status_code == 403
    assert _patch(api, run_id, {"name": "o"}, outsider).status_code == 404
    claim = api.client.post(
        f"/api/v1/runs/{run_id}/claim", json={"attempt": 1, "worker": "w"}, headers=api.worker
    )
    assert claim.status_code == 200
    run_token = {"Authorization": f"Bearer {claim.json()['run_token']}"}
    url = f"/api/v1/runs/{run_id}"
    assert api.client.patch(url, json={"name": "self"}, headers=run_token).status_code == 403
    # what older workers sent with the run's token still answers (and is ignored)
    old = api.client.patch(url, json={"mlflow_run_id": "abc"}, headers=run_token)
    assert old.status_code == 200 and old.json()["mlflow_run_id"] is None and old.json()["name"] is None


def test_the_runs_table_shows_names_and_a_rename_rebuilds_its_kept_encoding(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[int] = []
    encode = table.runs_table_json

    def counting(session: Any, experiment_id: int) -> bytes:
        built.append(experiment_id)
        return encode(session, experiment_id)

    monkeypatch.setattr(table, "runs_table_json", counting)
    exp = api.submit({}, sweep={"grid": {"train.lr": [0.1, 0.01, 0.001]}}).json()
    url = f"/api/v1/experiments/{exp['id']}/runs-table"
    assert api.client.get(url, headers=api.h()).json()["name"] == [None, None, None]
    assert api.client.get(url, headers=api.h()).json()["name"] == [None, None, None] and len(built) == 1
    assert _patch(api, exp["runs"][1]["id"], {"name": "middle"}).status_code == 200
    assert api.client.get(url, headers=api.h()).json()["name"] == [None, "middle", None] and len(built) == 2
    assert _patch(api, exp["runs"][1]["id"], {"name": ""}).status_code == 200
    assert api.client.get(url, headers=api.h()).json()["name"] == [None, None, None] and len(built) == 3


def test_the_feed_shows_each_run_by_its_name_now(api: Api) -> None:
    exp = api.submit({}, sweep={"grid": {"train.lr": [0.1, 0.01]}}).json()
    first, second = (r["id"] for r in exp["runs"])
    assert api.client.post(f"/api/v1/runs/{first}/cancel", headers=api.h()).status_code == 200
    assert api.client.post(f"/api/v1/runs/{second}/cancel", headers=api.h()).status_code == 200
    _patch(api, first, {"name": "old name"})
    _patch(api, first, {"name": "new name"})
    rows = [a for a in _feed(api, exp["project_id"]) if a["run_id"] is not None]
    assert {a["run_id"]: a["run_name"] for a in rows} == {first: "new name", second: None}
    assert {a["type"] for a in rows if a["run_id"] == first} == {"cancelled", "renamed"}
    submitted = [a for a in _feed(api, exp["project_id"]) if a["type"] == "submitted"]
    assert submitted and all(a["run_name"] is None for a in submitted)
