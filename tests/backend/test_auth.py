from __future__ import annotations

from tests.backend.conftest import USER_PASSWORD, Api


def test_health_needs_no_auth(api: Api) -> None:
    r = api.client.get("/api/v1/health")
    assert r.status_code == 200 and r.json()["status"] == "ok"


def test_no_credentials_is_401(api: Api) -> None:
    assert api.client.get("/api/v1/runs").status_code == 401
    r = api.client.post("/api/v1/experiments", json={"name": "x", "kind": "diagnostic"})
    assert r.status_code == 401 and r.json()["code"] == "unauthorized"
    assert api.client.get("/api/v1/runs", headers=api.h("rl_bogus")).status_code == 401
    assert api.client.get("/api/v1/runs", headers=api.h("not-a-jwt")).status_code == 401


def test_login_gives_a_jwt_and_tokens_are_shown_once(api: Api) -> None:
    api.user("alice")
    assert (
        api.client.post(
            "/api/v1/auth/login", json={"username": "alice", "password": "wrong-pass"}
        ).status_code
        == 401
    )
    r = api.client.post("/api/v1/auth/login", json={"username": "alice", "password": USER_PASSWORD})
    assert r.status_code == 200
    jwt = r.json()["access_token"]
    me = api.client.get("/api/v1/auth/me", headers=api.h(jwt)).json()
    assert me["username"] == "alice" and me["memberships"][0]["role"] == "member"
    created = api.client.post("/api/v1/auth/tokens", json={"name": "laptop"}, headers=api.h(jwt)).json()
    assert created["token"].startswith("rl_")
    listed = api.client.get("/api/v1/auth/tokens", headers=api.h(jwt)).json()
    assert all("token" not in t for t in listed) and any(t["id"] == created["id"] for t in listed)
    assert api.client.get("/api/v1/runs", headers=api.h(created["token"])).status_code == 200
    assert api.client.delete(f"/api/v1/auth/tokens/{created['id']}", headers=api.h(jwt)).status_code == 204
    assert api.client.get("/api/v1/runs", headers=api.h(created["token"])).status_code == 401


def test_viewer_cannot_submit_cancel_or_comment(api: Api) -> None:
    viewer = api.user("vic", role="viewer")
    r = api.submit({}, token=viewer)
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    run = api.submit({}).json()["runs"][0]
    assert api.client.get(f"/api/v1/runs/{run['id']}", headers=api.h(viewer)).status_code == 200
    assert api.client.post(f"/api/v1/runs/{run['id']}/cancel", headers=api.h(viewer)).status_code == 403
    r = api.client.post(f"/api/v1/runs/{run['id']}/comments", json={"body": "hi"}, headers=api.h(viewer))
    assert r.status_code == 403


def test_another_projects_run_is_404(api: Api) -> None:
    outsider = api.user("olga", project="other")
    run = api.submit({}).json()["runs"][0]
    assert api.client.get(f"/api/v1/runs/{run['id']}", headers=api.h(outsider)).status_code == 404
    assert api.client.get(f"/api/v1/runs/{run['id']}/metrics", headers=api.h(outsider)).status_code == 404
    assert (
        api.client.get(f"/api/v1/experiments/{run['experiment_id']}", headers=api.h(outsider)).status_code
        == 404
    )
    listed = api.client.get("/api/v1/runs", headers=api.h(outsider)).json()
    assert listed["items"] == []
    r = api.submit({}, token=outsider, project="default")
    assert r.status_code == 404


def test_worker_token_claims_but_reads_nothing_and_cannot_submit(api: Api) -> None:
    worker = api.worker_token
    r = api.client.post("/api/v1/experiments", json={"name": "x", "kind": "diagnostic"}, headers=worker)
    assert r.status_code == 403  # the worker token only claims and releases runs
    run = api.submit({}).json()["runs"][0]
    assert api.client.get(f"/api/v1/runs/{run['id']}", headers=worker).status_code == 403
    assert api.client.post(f"/api/v1/runs/{run['id']}/cancel", headers=worker).status_code == 403
    r = api.client.post(f"/api/v1/runs/{run['id']}/claim", json={"worker": "w"}, headers=worker)
    assert r.status_code == 200 and r.json()["run_token"].startswith("rlrun.")


def test_missing_and_foreign_experiments_look_the_same(api: Api) -> None:
    outsider = api.user("ozzie", project="other")
    run = api.submit({}).json()["runs"][0]
    foreign = api.client.get(f"/api/v1/runs?experiment_id={run['experiment_id']}", headers=api.h(outsider))
    missing = api.client.get("/api/v1/runs?experiment_id=999999", headers=api.h(outsider))
    assert foreign.status_code == missing.status_code == 404


def test_only_project_admins_manage_members(api: Api) -> None:
    member = api.user("mia")
    r = api.client.put(
        "/api/v1/projects/1/members", json={"username": "nobody", "role": "viewer"}, headers=api.h(member)
    )
    assert r.status_code == 403  # refused before the username is looked up
    r = api.client.put(
        "/api/v1/projects/1/members", json={"username": "mia", "role": "viewer"}, headers=api.h()
    )
    assert r.status_code == 200 and r.json()["role"] == "viewer"
