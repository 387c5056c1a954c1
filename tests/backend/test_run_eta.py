"""Every running run has an ETA from its progress rate, answered by the API: a page opened
mid-run, the runs list and the event stream have it at once, with no progress history of their own."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from backend.runs import service
from tests.backend.conftest import Api

# SQL is the subject (timestamps stored and compared by the database): SQLite and Postgres
pytestmark = pytest.mark.dialect_matrix

T0 = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)


class Clock:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = T0
        monkeypatch.setattr(service, "utcnow", lambda: self.now)

    def at(self, seconds: float) -> datetime:
        self.now = T0 + timedelta(seconds=seconds)
        return self.now


def _eta(run: dict[str, Any]) -> datetime | None:
    value = run["progress"]["eta_at"]
    return None if value is None else datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_the_eta_follows_the_current_attempts_progress_rate(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock(monkeypatch)
    run = api.submit({}).json()["runs"][0]
    url = f"/api/v1/runs/{run['id']}"
    assert _eta(run) is None  # queued

    def beat(attempt: int, done: int | None, total: int = 110) -> dict[str, Any]:
        body: dict[str, Any] = {"attempt": attempt}
        if done is not None:
            body["progress"] = {"done": done, "total": total, "message": ""}
        assert api.client.post(f"{url}/heartbeat", json=body, headers=api.worker).status_code == 200
        got: dict[str, Any] = api.client.get(url, headers=api.h()).json()
        return got

    clock.at(0)
    assert api.client.post(f"{url}/claim", json={"attempt": 1, "worker": "w"}, headers=api.worker).is_success
    clock.at(5)
    assert beat(1, None)["progress"]["eta_at"] is None  # no progress yet
    clock.at(60)  # the kind's first report comes after its set-up (a model loaded): not counted
    assert _eta(beat(1, 10)) is None  # one report is no rate
    clock.at(70)
    got = beat(1, 20)  # 10 steps in 10 s: 90 left, 90 s from the report
    assert _eta(got) == T0 + timedelta(seconds=160)
    assert got["progress"] == {"done": 20, "total": 110, "message": "", "eta_at": got["progress"]["eta_at"]}
    clock.at(75)
    assert _eta(beat(1, 20)) == T0 + timedelta(seconds=160)  # no new step: the same time, counted down to
    clock.at(90)
    # slower: 20 steps in the 30 s since the first report, 80 left
    assert _eta(beat(1, 30)) == T0 + timedelta(seconds=90 + 80 * 1.5)
    # the runs list, the experiment's runs and the event stream's snapshot say the same
    listed = api.client.get("/api/v1/runs", params={"status": "running"}, headers=api.h()).json()["items"]
    assert [_eta(r) for r in listed] == [T0 + timedelta(seconds=210)]
    detail = api.client.get(f"/api/v1/experiments/{run['experiment_id']}", headers=api.h()).json()
    assert _eta(detail["runs"][0]) == T0 + timedelta(seconds=210)

    # a new phase (another total) measures afresh
    clock.at(100)
    assert _eta(beat(1, 0, total=10)) is None
    clock.at(110)
    assert _eta(beat(1, 5, total=10)) == T0 + timedelta(seconds=120)

    # a worker shutting down gives the run back; the next attempt resumes at 50 of 110 and measures its
    # own rate from its first report, not from the run's first start
    assert api.client.post(f"{url}/release", json={"attempt": 1}, headers=api.worker).is_success
    assert _eta(api.client.get(url, headers=api.h()).json()) is None  # queued
    clock.at(500)
    assert api.client.post(f"{url}/claim", json={"attempt": 2, "worker": "w"}, headers=api.worker).is_success
    assert _eta(api.client.get(url, headers=api.h()).json()) is None
    clock.at(510)
    assert _eta(beat(2, 50)) is None
    clock.at(530)
    assert _eta(beat(2, 60)) == T0 + timedelta(seconds=530 + 50 * 2)

    # done at last: no ETA
    fin = {"attempt": 2, "status": "succeeded", "progress": {"done": 110, "total": 110, "message": "done"}}
    assert api.client.post(f"{url}/finish", json=fin, headers=api.worker).is_success
    assert _eta(api.client.get(url, headers=api.h()).json()) is None


def test_the_event_streams_progress_carries_the_eta(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    from backend.runs import events

    clock = Clock(monkeypatch)
    run = api.submit({}).json()["runs"][0]
    url = f"/api/v1/runs/{run['id']}"
    api.client.post(f"{url}/claim", json={"attempt": 1, "worker": "w"}, headers=api.worker)
    for t, done in ((10, 0), (20, 25)):
        clock.at(t)
        body = {"attempt": 1, "progress": {"done": done, "total": 100, "message": ""}}
        api.client.post(f"{url}/heartbeat", json=body, headers=api.worker)
    factory = api.client.app.state.session_factory  # type: ignore[attr-defined]
    snap = events._snapshot(factory, run["id"], api.settings.heartbeat_timeout)
    assert snap is not None
    assert snap[0]["progress"]["eta_at"] == (T0 + timedelta(seconds=50)).isoformat().replace("+00:00", "Z")
