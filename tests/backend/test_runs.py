from __future__ import annotations

import time

import pytest

from backend.db import get_engine, session_factory, session_scope
from backend.runs import service
from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)


def _run(api: Api, **kw: object) -> dict:
    return api.submit(dict(kw) if kw else {}).json()["runs"][0]


def test_claim_rejects_second_worker_of_same_attempt(api: Api) -> None:
    run = _run(api)
    url = f"/api/v1/runs/{run['id']}"
    r = api.client.post(f"{url}/claim", json={"attempt": 1, "worker": "w1"}, headers=api.worker)
    assert r.status_code == 200 and r.json()["status"] == "running" and r.json()["worker"] == "w1"
    r = api.client.post(f"{url}/claim", json={"attempt": 1, "worker": "w2"}, headers=api.worker)
    assert r.status_code == 409 and r.json()["code"] == "conflict"
    r = api.client.post(f"{url}/claim", json={"attempt": 2, "worker": "w2"}, headers=api.worker)
    assert r.status_code == 409


def test_heartbeat_progress_finish_and_idempotent_finish(api: Api) -> None:
    run = _run(api)
    url = f"/api/v1/runs/{run['id']}"
    api.client.post(f"{url}/claim", json={"attempt": 1, "worker": "w1"}, headers=api.worker)
    r = api.client.post(
        f"{url}/heartbeat",
        json={"attempt": 1, "progress": {"done": 5, "total": 10, "message": "half"}},
        headers=api.worker,
    )
    assert r.status_code == 200 and r.json() == {"cancel_requested": False}
    got = api.client.get(url, headers=api.h()).json()
    # one report is no rate yet: no ETA (tests/backend/test_run_eta.py)
    assert got["progress"] == {"done": 5, "total": 10, "message": "half", "eta_at": None}
    fin = {"attempt": 1, "status": "succeeded", "mlflow_run_id": "abc"}
    assert api.client.post(f"{url}/finish", json=fin, headers=api.worker).status_code == 200
    assert api.client.post(f"{url}/finish", json=fin, headers=api.worker).status_code == 200
    got = api.client.get(url, headers=api.h()).json()
    assert got["status"] == "succeeded" and got["finished_at"]
    assert got["mlflow_run_id"] is None  # the API's MLflow mirror owns it; what a worker says is ignored
    r = api.client.post(f"{url}/heartbeat", json={"attempt": 1}, headers=api.worker)
    assert r.status_code == 409


def test_cancel_queued_at_once_and_running_cooperatively(api: Api) -> None:
    queued = _run(api)
    r = api.client.post(f"/api/v1/runs/{queued['id']}/cancel", headers=api.h())
    assert r.json()["status"] == "cancelled"
    claim = api.client.post(
        f"/api/v1/runs/{queued['id']}/claim", json={"attempt": 1, "worker": "w"}, headers=api.worker
    )
    assert claim.status_code == 409  # a late delivery of a cancelled run never runs
    running = _run(api)
    url = f"/api/v1/runs/{running['id']}"
    api.client.post(f"{url}/claim", json={"attempt": 1, "worker": "w"}, headers=api.worker)
    assert api.client.post(f"{url}/cancel", headers=api.h()).json()["cancel_requested"] is True
    assert api.client.post(f"{url}/heartbeat", json={"attempt": 1}, headers=api.worker).json()[
        "cancel_requested"
    ]
    api.client.post(f"{url}/finish", json={"attempt": 1, "status": "cancelled"}, headers=api.worker)
    assert api.client.get(url, headers=api.h()).json()["status"] == "cancelled"


def test_retry_only_failed_or_cancelled(api: Api) -> None:
    run = _run(api)
    url = f"/api/v1/runs/{run['id']}"
    assert api.client.post(f"{url}/retry", headers=api.h()).status_code == 409
    api.client.post(f"{url}/claim", json={"attempt": 1, "worker": "w"}, headers=api.worker)
    api.client.post(
        f"{url}/finish", json={"attempt": 1, "status": "failed", "error": "Traceback..."}, headers=api.worker
    )
    assert api.client.get(url, headers=api.h()).json()["error"] == "Traceback..."
    r = api.client.post(f"{url}/retry", headers=api.h()).json()
    assert r["status"] == "queued" and r["attempt"] == 2 and r["error"] is None


def test_reaper_requeues_stale_runs_then_fails_past_max_attempts(api: Api) -> None:
    run = _run(api)
    url = f"/api/v1/runs/{run['id']}"
    factory = session_factory(get_engine(api.settings.database_url))
    for attempt in (1, 2, 3):
        assert (
            api.client.post(
                f"{url}/claim", json={"attempt": attempt, "worker": "w"}, headers=api.worker
            ).status_code
            == 200
        )
        time.sleep(0.3)
        with session_scope(factory) as s:
            outcome = service.reap(s, timeout_seconds=0.1)
        got = api.client.get(url, headers=api.h()).json()
        if attempt < 3:
            assert outcome == [(run["id"], "requeued")]
            assert got["status"] == "queued" and got["attempt"] == attempt + 1
            # the lost worker's heartbeat is refused: it no longer owns the run
            assert (
                api.client.post(f"{url}/heartbeat", json={"attempt": attempt}, headers=api.worker).status_code
                == 409
            )
        else:
            assert outcome == [(run["id"], "failed")]
            assert got["status"] == "failed" and "lost" in got["error"]


def test_runs_list_filters_sorts_and_paginates(api: Api) -> None:
    exp = api.submit({}, {"grid": {"seed": [1, 2, 3, 4, 5]}}).json()
    runs = exp["runs"]
    for i, run in enumerate(runs):
        api.client.post(
            f"/api/v1/runs/{run['id']}/metrics",
            json={
                "points": [
                    {"key": "loss", "step": 1, "value": 10.0},
                    {"key": "loss", "step": 2, "value": float(i)},
                ]
            },
            headers=api.worker,
        )
    api.client.put(f"/api/v1/runs/{runs[0]['id']}/tags/best", headers=api.h())
    url = f"/api/v1/runs?experiment_id={exp['id']}"
    by_metric = api.client.get(f"{url}&sort=metric:loss&order=asc&limit=2", headers=api.h()).json()
    assert [r["summary"]["loss"] for r in by_metric["items"]] == [0.0, 1.0]
    nxt = api.client.get(
        f"{url}&sort=metric:loss&order=asc&limit=2&cursor={by_metric['next_cursor']}", headers=api.h()
    )
    assert [r["summary"]["loss"] for r in nxt.json()["items"]] == [2.0, 3.0]
    seen: list[int] = []
    cursor = ""
    while True:
        page = api.client.get(f"{url}&limit=2{cursor}", headers=api.h()).json()
        seen += [r["id"] for r in page["items"]]
        if not page["next_cursor"]:
            break
        cursor = f"&cursor={page['next_cursor']}"
    assert seen == sorted((r["id"] for r in runs), reverse=True)
    assert [r["id"] for r in api.client.get(f"{url}&tag=best", headers=api.h()).json()["items"]] == [
        runs[0]["id"]
    ]
    assert len(api.client.get(f"{url}&status=queued", headers=api.h()).json()["items"]) == 5
    assert api.client.get(f"{url}&status=running", headers=api.h()).json()["items"] == []
    assert api.client.get(f"{url}&status=bogus", headers=api.h()).status_code == 422


def test_logs_append_and_tail(api: Api) -> None:
    run = _run(api)
    url = f"/api/v1/runs/{run['id']}/logs"
    api.client.post(url, json={"lines": ["a", "b"]}, headers=api.worker)
    page = api.client.get(url, headers=api.h()).json()
    assert [i["line"] for i in page["items"]] == ["a", "b"]
    api.client.post(url, json={"lines": ["c"]}, headers=api.worker)
    more = api.client.get(f"{url}?after={page['last_seq']}", headers=api.h()).json()
    assert [i["line"] for i in more["items"]] == ["c"]


def test_reaper_cancels_a_run_whose_cancel_was_asked_before_its_worker_died(api: Api) -> None:
    run = _run(api)
    url = f"/api/v1/runs/{run['id']}"
    api.client.post(f"{url}/claim", json={"attempt": 1, "worker": "w"}, headers=api.worker)
    api.client.post(f"{url}/cancel", headers=api.h())
    time.sleep(0.3)
    with session_scope(session_factory(get_engine(api.settings.database_url))) as s:
        assert service.reap(s, timeout_seconds=0.1) == [(run["id"], "cancelled")]
    assert api.client.get(url, headers=api.h()).json()["status"] == "cancelled"


def test_a_repeated_claim_by_the_same_worker_is_answered_again(api: Api) -> None:
    run = _run(api)
    url = f"/api/v1/runs/{run['id']}/claim"
    first = api.client.post(url, json={"attempt": 1, "worker": "host:1"}, headers=api.worker)
    again = api.client.post(url, json={"attempt": 1, "worker": "host:1"}, headers=api.worker)
    assert first.status_code == again.status_code == 200
    assert (
        api.client.post(url, json={"attempt": 1, "worker": "host:2"}, headers=api.worker).status_code == 409
    )


def test_members_cannot_claim_or_finish_runs(api: Api) -> None:
    member = api.user("mo")
    run = _run(api)
    url = f"/api/v1/runs/{run['id']}"
    assert (
        api.client.post(f"{url}/claim", json={"attempt": 1, "worker": "x"}, headers=api.h(member)).status_code
        == 403
    )
    api.client.post(f"{url}/claim", json={"attempt": 1, "worker": "w"}, headers=api.worker)
    fin = {"attempt": 1, "status": "succeeded"}
    assert api.client.post(f"{url}/finish", json=fin, headers=api.h(member)).status_code == 403
    # members may still log metrics from their own scripts
    pts = {"points": [{"key": "acc", "step": 1, "value": 0.5}]}
    assert api.client.post(f"{url}/metrics", json=pts, headers=api.h(member)).status_code == 200


def test_query_token_only_opens_event_streams(api: Api) -> None:
    assert api.client.get(f"/api/v1/runs?token={api.admin_token}").status_code == 401


def test_malformed_cursors_and_bad_sort_keys_are_422(api: Api) -> None:
    import base64

    for raw in (b'{"id":"abc"}', b'{"x":1}', b'{"offset":-5}', b"[1]", b"not json"):
        c = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        assert api.client.get(f"/api/v1/runs?cursor={c}", headers=api.h()).status_code == 422
        r = api.client.get(f"/api/v1/runs?sort=metric:loss&cursor={c}", headers=api.h())
        assert r.status_code == 422
        assert api.client.get(f"/api/v1/experiments?cursor={c}", headers=api.h()).status_code == 422
    assert api.client.get("/api/v1/runs?sort=metric:_steps", headers=api.h()).status_code == 422


def test_release_requeues_without_using_up_an_attempt(api: Api) -> None:
    run = _run(api)
    url = f"/api/v1/runs/{run['id']}"
    api.client.post(f"{url}/claim", json={"attempt": 1, "worker": "w"}, headers=api.worker)
    assert api.client.post(f"{url}/release", json={"attempt": 2}, headers=api.worker).status_code == 409
    member = api.user("rel")
    assert api.client.post(f"{url}/release", json={"attempt": 1}, headers=api.h(member)).status_code == 403
    r = api.client.post(f"{url}/release", json={"attempt": 1}, headers=api.worker).json()
    # the next attempt, the released one counted apart: the allowance is unchanged
    assert (r["status"], r["attempt"], r["released"], r["max_attempts"], r["worker"]) == (
        "queued",
        2,
        1,
        3,
        None,
    )


def test_a_run_given_back_after_a_cancel_ends_cancelled_not_queued(api: Api) -> None:
    """A cancel asked of a running run whose worker then shuts down (and releases it) is still a cancel:
    requeued, the next claim would clear the flag and run it again."""
    run = _run(api)
    url = f"/api/v1/runs/{run['id']}"
    api.client.post(f"{url}/claim", json={"attempt": 1, "worker": "w"}, headers=api.worker)
    assert api.client.post(f"{url}/cancel", headers=api.h()).json()["cancel_requested"] is True
    r = api.client.post(f"{url}/release", json={"attempt": 1}, headers=api.worker).json()
    assert (r["status"], r["attempt"]) == ("cancelled", 1)


def test_a_retry_never_queues_an_attempt_twice(api: Api) -> None:
    """Task ids are per attempt and the cancel of a queued run revokes its attempt's id
    (workers drop such a message unrun for hours). Retry A reads the run (cancelled at attempt 1); retry
    B requeues it as attempt 2 and a cancel revokes attempt 2; then A writes: it must not queue attempt
    2 again (the run would wait, dispatched, for a message no worker runs)."""
    import pytest

    from backend.errors import Conflict
    from backend.models import Run

    run = _run(api)
    url = f"/api/v1/runs/{run['id']}"
    factory = session_factory(get_engine(api.settings.database_url))
    assert api.client.post(f"{url}/cancel", headers=api.h()).json()["status"] == "cancelled"
    with factory() as session_a:
        stale = session_a.get(Run, run["id"])  # what retry A read before B and the cancel
        assert stale is not None and (stale.status, stale.attempt) == ("cancelled", 1)
        session_a.commit()  # A's values stay as read (expire_on_commit=False)
        assert api.client.post(f"{url}/retry", headers=api.h()).json()["attempt"] == 2
        assert api.client.post(f"{url}/cancel", headers=api.h()).json()["status"] == "cancelled"
        with pytest.raises(Conflict):
            service.retry(session_a, stale)
        session_a.rollback()
    got = api.client.get(url, headers=api.h()).json()
    assert (got["status"], got["attempt"]) == ("cancelled", 2)
    r = api.client.post(f"{url}/retry", headers=api.h()).json()
    assert (r["status"], r["attempt"]) == ("queued", 3)
    # a double click: B requeued the run first; A's retry is refused and leaves B's attempt alone
    api.client.post(f"{url}/cancel", headers=api.h())
    with factory() as session_a:
        stale = session_a.get(Run, run["id"])
        assert stale is not None
        session_a.commit()
        assert api.client.post(f"{url}/retry", headers=api.h()).json()["attempt"] == 4
        with pytest.raises(Conflict):
            service.retry(session_a, stale)
        session_a.rollback()
    got = api.client.get(url, headers=api.h()).json()
    assert (got["status"], got["attempt"]) == ("queued", 4)
