"""A draft's frozen blocks show exactly what they showed when the server froze them (backend/reports/kept.py):
identical after their runs are retried and go on; a cut-off the server did not take (or whose kept data
is gone) is read again and says so (``exact: false``, and whether a run changed since); *Freeze now*
replaces the kept data, a block made live or removed loses it, the report's deletion removes it; the
bound on what is kept; publishing stores the data the draft shows; the migration's round trip. On SQLite
and Postgres."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import func, inspect, select, update

from backend.db import get_engine, session_factory, session_scope
from backend.models import ReportFrozenData, Run
from backend.reports import kept
from tests.backend.conftest import Api
from tests.backend.test_reports import _create, _figure, _publish, _run, _save

pytestmark = pytest.mark.dialect_matrix  # the kept rows, their cascade and the migration are SQL


def _claim(api: Api, run_id: int, attempt: int) -> None:
    r = api.client.post(
        f"/api/v1/runs/{run_id}/claim", json={"attempt": attempt, "worker": "w1"}, headers=api.worker
    )
    assert r.status_code == 200, r.text


def _log(api: Api, run_id: int, attempt: int, steps: range, scale: float = 1.0) -> None:
    """The attempt writes loss = scale * (100 - step) at these steps (overwriting any written before)."""
    body = {
        "attempt": attempt,
        "points": [{"key": "loss", "step": s, "value": scale * (100 - s)} for s in steps],
    }
    r = api.client.post(f"/api/v1/runs/{run_id}/metrics", json=body, headers=api.worker)
    assert r.status_code == 200, r.text


def _retry(api: Api, run_id: int, attempt: int) -> None:
    """Attempt ``attempt`` fails and the run is retried: the next attempt is claimed."""
    fin = {"attempt": attempt, "status": "failed", "error": "out of memory"}
    assert api.client.post(f"/api/v1/runs/{run_id}/finish", json=fin, headers=api.worker).status_code == 200
    r = api.client.post(f"/api/v1/runs/{run_id}/retry", headers=api.h())
    assert r.status_code == 200, r.text
    _claim(api, run_id, attempt + 1)


def _started(api: Api, name: str = "exp") -> int:
    """A run at attempt 1 with loss logged at steps 0-49."""
    run_id = _run(api, name)
    _claim(api, run_id, 1)
    _log(api, run_id, 1, range(50))
    return run_id


def _table(block_id: str, run_ids: list[int], **kw: Any) -> dict[str, Any]:
    return {
        "id": block_id,
        "type": "run_table",
        "source": {"run_ids": run_ids},
        "columns": ["name", "metrics.loss"],
        **kw,
    }


def _data(api: Api, report: dict[str, Any]) -> dict[str, Any]:
    r = api.client.get(f"/api/v1/reports/{report['id']}/data", headers=api.h())
    assert r.status_code == 200, r.text
    return dict(r.json())


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _kept(api: Api, report_id: int) -> dict[str, tuple[str, int, bool]]:
    """The report's kept rows: block id -> (key hash, size, whether the data is kept)."""
    with session_scope(session_factory(get_engine(api.settings.database_url))) as s:
        rows = s.scalars(select(ReportFrozenData).where(ReportFrozenData.report_id == report_id))
        return {r.block_id: (r.key_hash, r.size, r.data is not None) for r in rows}


def test_a_frozen_block_shows_the_same_data_after_its_run_is_retried_and_goes_on(api: Api) -> None:
    run_id = _started(api)
    report = _create(api, [_figure("f", [run_id]), _table("t", [run_id])]).json()
    cut = report["blocks"][0]["cutoff"]["runs"][0]
    assert (cut["attempt"], cut["steps"], cut["revs"]) == (1, {"loss": 49}, {"loss": 1})
    before = _data(api, report)
    assert before["f"]["exact"] is True and before["f"]["exact_note"] is None
    assert before["f"]["series"][0]["points"][-1] == [49, 51.0] and before["t"]["rows"] == [
        [run_id, None, 51.0]
    ]
    assert set(_kept(api, report["id"])) == {"f", "t"}

    # attempt 1 fails; attempt 2 writes every step again with other values, and goes on past the cut-off
    _retry(api, run_id, 1)
    _log(api, run_id, 2, range(80), scale=-3.0)
    assert _canonical(_data(api, report)) == _canonical(before)
    # a save that sends the blocks back unchanged, or with a new title, keeps what was kept
    saved = _save(api, report, [{**report["blocks"][0], "title": "the loss"}, report["blocks"][1]]).json()
    after = _data(api, saved)
    assert _canonical(after) == _canonical(before)

    # the same cut-off read again (a block whose data was not kept) shows the retry's values, and says so
    copy = _create(api, [_figure("f", [run_id], cutoff=report["blocks"][0]["cutoff"])]).json()
    assert copy["blocks"][0]["cutoff"] == report["blocks"][0]["cutoff"]  # taken as sent, not by the server
    again = _data(api, copy)["f"]
    assert again["exact"] is False and again["series"][0]["points"][-1] == [49, -153.0]
    assert again["exact_note"] == (
        f"{kept.NOT_KEPT}; the run changed since freezing (run {run_id} is at attempt 2, frozen at attempt 1)"
    )
    assert _kept(api, copy["id"]) == {}


def test_a_cutoff_the_server_did_not_take_is_served_as_not_exact(api: Api) -> None:
    run_id = _started(api)
    frozen = _create(api, [_figure("f", [run_id]), _table("t", [run_id])]).json()
    supplied = [{**b, "id": f"copy-{b['id']}"} for b in frozen["blocks"]]
    report = _create(api, [*supplied, _figure("live", [run_id], mode="live")]).json()
    data = _data(api, report)
    server = _data(api, frozen)
    for block_id in ("f", "t"):
        got = data[f"copy-{block_id}"]
        # nothing changed yet: the same points and rows, but not the kept ones, and it says so
        assert (got["exact"], got["exact_note"]) == (False, kept.NOT_KEPT)
        assert (got["series"], got["rows"]) == (server[block_id]["series"], server[block_id]["rows"])
    assert data["live"]["exact"] is True and data["live"]["exact_note"] is None

    # the point at the cut-off's step written again in the same attempt: a change that reaches it
    _log(api, run_id, 1, range(49, 50), scale=2.0)
    note = _data(api, report)["copy-t"]["exact_note"]
    assert (
        note
        == f"{kept.NOT_KEPT}; the run changed since freezing (run {run_id}'s loss was written again at or below step 49)"
    )
    assert _data(api, frozen)["t"]["rows"] == [[run_id, None, 51.0]]
    # going on alone (new steps after the cut-off, a new row version) is no such change
    other = _started(api, "other")
    report = _create(api, [_figure("f", [other])]).json()
    copy = _create(api, [{**report["blocks"][0], "id": "copy"}]).json()
    _log(api, other, 1, range(50, 60))
    got = _data(api, copy)["copy"]
    assert (got["exact"], got["exact_note"]) == (False, kept.NOT_KEPT)
    assert got["runs"][0]["steps"] == {"loss": [0, 49]}


def test_editing_a_blocks_data_fields_drops_its_kept_data(api: Api) -> None:
    run_id = _started(api)
    report = _create(api, [_figure("f", [run_id])]).json()
    block = report["blocks"][0]
    assert _kept(api, report["id"])["f"][2] is True
    # a presentation field (log scale) keeps it; a data field (the keys, with the same cut-off) does not
    saved = _save(api, report, [{**block, "log_scale": True}]).json()
    assert _data(api, saved)["f"]["exact"] is True and "f" in _kept(api, report["id"])
    saved = _save(api, saved, [{**block, "metrics": ["loss", "acc"]}]).json()
    got = _data(api, saved)["f"]
    assert (got["exact"], got["exact_note"]) == (False, kept.NOT_KEPT)
    assert _kept(api, report["id"]) == {}


def test_freeze_now_replaces_the_kept_data_and_a_live_or_removed_block_loses_it(api: Api) -> None:
    run_id = _started(api)
    report = _create(api, [_figure("f", [run_id]), _figure("g", [run_id])]).json()
    first = _kept(api, report["id"])
    _log(api, run_id, 1, range(50, 100))
    # Freeze now: the editor sends the block without its cut-off
    saved = _save(api, report, [{**report["blocks"][0], "cutoff": None}, report["blocks"][1]]).json()
    assert saved["blocks"][0]["cutoff"]["runs"][0]["steps"] == {"loss": 99}
    rows = _kept(api, report["id"])
    assert set(rows) == {"f", "g"} and rows["f"][0] != first["f"][0] and rows["g"] == first["g"]
    fresh = _data(api, saved)
    assert fresh["f"]["exact"] is True and fresh["f"]["runs"][0]["steps"] == {"loss": [0, 99]}
    _retry(api, run_id, 1)
    _log(api, run_id, 2, range(120), scale=5.0)
    assert _canonical(_data(api, saved)) == _canonical(fresh)

    live = _save(api, saved, [{**saved["blocks"][0], "mode": "live"}, saved["blocks"][1]]).json()
    assert set(_kept(api, report["id"])) == {"g"}
    assert _data(api, live)["f"]["live"] is True
    _save(api, live, [])
    assert _kept(api, report["id"]) == {}


def test_deleting_the_report_deletes_its_kept_data(api: Api) -> None:
    run_id = _started(api)
    report = _create(api, [_figure("f", [run_id])]).json()
    _publish(api, report)
    assert set(_kept(api, report["id"])) == {"f"}
    assert api.client.delete(f"/api/v1/reports/{report['id']}", headers=api.h()).status_code == 204
    with session_scope(session_factory(get_engine(api.settings.database_url))) as s:
        assert s.scalar(select(func.count()).select_from(ReportFrozenData)) == 0


def test_publishing_stores_the_data_the_draft_shows(api: Api) -> None:
    run_id, live_run = _started(api), _started(api, "live")
    frozen = _create(api, [_figure("f", [run_id])]).json()
    report = _create(
        api,
        [
            _figure("f", [run_id]),
            {**frozen["blocks"][0], "id": "supplied"},
            _figure("l", [live_run], mode="live"),
        ],
    ).json()
    before = _data(api, report)
    _retry(api, run_id, 1)
    _log(api, run_id, 2, range(70), scale=-1.0)
    revision = _publish(api, report)
    url = f"/api/v1/reports/{report['id']}/revisions/{revision['number']}"
    published = api.client.get(url, headers=api.h()).json()
    assert len(published["content_hash"]) == 64
    # the kept block as frozen, the supplied cut-off as the draft reads it now (not exact, saying so)
    assert _canonical(published["data"]["f"]) == _canonical(before["f"])
    assert published["data"]["supplied"]["exact"] is False
    assert published["data"]["supplied"]["series"][0]["points"][-1] == [49, -51.0]
    assert "the run changed since freezing" in published["data"]["supplied"]["exact_note"]
    assert published["data"]["l"]["live"] is True and published["data"]["l"]["exact"] is True
    # the revision keeps what it stored whatever the runs do next
    _log(api, run_id, 2, range(70), scale=9.0)
    again = api.client.get(url, headers=api.h()).json()
    assert (
        again["data"]["f"] == published["data"]["f"]
        and again["data"]["supplied"] == published["data"]["supplied"]
    )
    html = api.client.get(f"{url}/export", params={"format": "html"}, headers=api.h()).text
    assert "not exact: read again up to its cut-off" in html


def test_kept_data_over_the_bound_keeps_only_its_size(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    run_id = _started(api)
    size = _kept(api, _create(api, [_figure("f", [run_id])]).json()["id"])["f"][1]
    assert 500 < size < kept.MAX_BLOCK_BYTES
    monkeypatch.setattr(kept, "MAX_BLOCK_BYTES", size - 1)
    report = _create(api, [_figure("f", [run_id])]).json()
    assert _kept(api, report["id"])["f"][1:] == (size, False)
    got = _data(api, report)["f"]
    assert got["exact"] is False and got["exact_note"].startswith(
        "read again up to its cut-off: its data when"
    )
    assert got["series"][0]["points"][-1] == [49, 51.0]
    # a report keeps its blocks' data in order up to its own bound
    monkeypatch.setattr(kept, "MAX_BLOCK_BYTES", size)
    monkeypatch.setattr(kept, "MAX_REPORT_BYTES", size + size // 2)
    report = _create(api, [_figure("a", [run_id]), _figure("b", [run_id])]).json()
    assert {k: v[2] for k, v in _kept(api, report["id"]).items()} == {"a": True, "b": False}


def test_kept_data_never_shows_a_run_no_longer_the_reports_projects(api: Api) -> None:
    api.user("ozzie", project="elsewhere")
    run_id = _started(api)
    report = _create(api, [_figure("f", [run_id])]).json()
    projects = api.client.get("/api/v1/projects", headers=api.h()).json()
    elsewhere = next(p["id"] for p in projects if p["name"] == "elsewhere")
    with session_scope(session_factory(get_engine(api.settings.database_url))) as s:
        s.execute(update(Run).where(Run.id == run_id).values(project_id=elsewhere))
    got = _data(api, report)["f"]
    assert (got["exact"], got["exact_note"]) == (False, kept.LEFT)
    assert got["visible"] is False and got["series"] == [] and got["hidden_runs"] == 1


def test_the_migration_adds_and_drops_the_table(database_url: str) -> None:
    from alembic import command

    from backend.bootstrap import alembic_config

    config = alembic_config(database_url)
    engine = get_engine(database_url)
    command.upgrade(config, "head")
    assert "report_frozen_data" in inspect(engine).get_table_names()
    command.downgrade(config, "0031")
    assert "report_frozen_data" not in inspect(engine).get_table_names()
    assert "reports" in inspect(engine).get_table_names()
    command.upgrade(config, "head")
    columns = {c["name"] for c in inspect(engine).get_columns("report_frozen_data")}
    assert columns == {"id", "report_id", "block_id", "key_hash", "data", "size", "created_at"}
