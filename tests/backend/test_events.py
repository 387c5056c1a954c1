from __future__ import annotations

import json

from tests.backend.conftest import Api


def _ticket(api: Api, run_id: int, token: str, route: str = "read-ticket") -> str:
    answer = api.client.post(f"/api/v1/runs/{run_id}/{route}", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.text
    ticket: str = answer.json()["ticket"]
    return ticket


def _events(api: Api, run_id: int, token: str) -> list[tuple[str, dict]]:
    out: list[tuple[str, dict]] = []
    with api.client.stream("GET", f"/api/v1/runs/{run_id}/events?ticket={_ticket(api, run_id, token)}") as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        name = None
        for line in r.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and name:
                out.append((name, json.loads(line[6:])))
                if name == "end":
                    break
    return out


def test_event_stream_reports_status_progress_metrics_and_end(api: Api) -> None:
    run = api.submit({}).json()["runs"][0]
    url = f"/api/v1/runs/{run['id']}"
    api.client.post(f"{url}/claim", json={"attempt": 1, "worker": "w"}, headers=api.worker)
    api.client.post(
        f"{url}/heartbeat",
        json={"attempt": 1, "progress": {"done": 3, "total": 9, "message": ""}},
        headers=api.worker,
    )
    api.client.post(
        f"{url}/metrics", json={"points": [{"key": "loss", "step": 7, "value": 1.0}]}, headers=api.worker
    )
    api.client.post(f"{url}/finish", json={"attempt": 1, "status": "succeeded"}, headers=api.worker)
    events = dict(_events(api, run["id"], api.admin_token))
    assert events["status"]["status"] == "succeeded"
    assert events["progress"]["total"] == 9
    assert events["metrics"] == {"steps": {"loss": 7}}
    assert events["end"] == {"status": "succeeded"}


def test_event_stream_needs_credentials(api: Api) -> None:
    run = api.submit({}).json()["runs"][0]
    assert api.client.get(f"/api/v1/runs/{run['id']}/events").status_code == 401
    outsider = api.user("eve", project="elsewhere")
    for route in ("read-ticket", "events/ticket"):
        answer = api.client.post(
            f"/api/v1/runs/{run['id']}/{route}", headers={"Authorization": f"Bearer {outsider}"}
        )
        assert answer.status_code == 404


def test_event_stream_takes_a_ticket_in_the_url_never_a_login(api: Api) -> None:
    """A login JWT or an API token in a URL ends up in access logs: only a one-minute ticket for one run
    is taken from the query string, and a ticket is no login."""
    run, other = (r["id"] for r in api.submit({}, sweep={"grid": {"seed": [1, 2]}}).json()["runs"])
    assert api.client.get(f"/api/v1/runs/{run}/events?token={api.admin_token}").status_code == 401
    jwt_login = api.client.post(
        "/api/v1/auth/login", json={"username": "admin", "password": api.admin_password}
    ).json()["access_token"]
    assert api.client.get(f"/api/v1/runs/{run}/events?ticket={jwt_login}").status_code == 401
    ticket = _ticket(api, run, api.admin_token)
    assert api.client.get(f"/api/v1/runs/{other}/events?ticket={ticket}").status_code == 401
    assert api.client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {ticket}"}).status_code == 401
    with api.client.stream("GET", f"/api/v1/runs/{run}/events?ticket={ticket}") as r:
        assert r.status_code == 200


def test_the_read_tickets_old_path_is_a_deprecated_alias(api: Api) -> None:
    """POST /runs/{id}/events/ticket, the route's name before it was called a run read ticket, answers
    the same ticket for dashboards and scripts of earlier versions, marked deprecated in the document."""
    run = api.submit({}).json()["runs"][0]["id"]
    ticket = _ticket(api, run, api.admin_token, route="events/ticket")
    with api.client.stream("GET", f"/api/v1/runs/{run}/events?ticket={ticket}") as r:
        assert r.status_code == 200
    paths = api.client.app.openapi()["paths"]  # type: ignore[attr-defined]
    old, new = (
        paths["/api/v1/runs/{run_id}/events/ticket"]["post"],
        paths["/api/v1/runs/{run_id}/read-ticket"]["post"],
    )
    assert old["deprecated"] is True and "deprecated" not in new
    assert (old["operationId"], new["operationId"]) == ("runs-events_ticket", "runs-read_ticket")
    assert old["responses"]["200"] == new["responses"]["200"]
