"""External runs (backend/tracking/): a script opens its own run, drives it with the run token it got,
is failed as crashed (never requeued) when its heartbeats stop, and resumes it by id."""

from __future__ import annotations

import time
from typing import Any

import pytest

from backend.db import get_engine, session_factory, session_scope
from backend.runs import service
from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)

PROVENANCE = {
    "command": "python train.py --lr 0.1",
    "git_commit": "0123abcd" * 5,
    "git_dirty": True,
    "git_diff": "--- a/train.py\n+++ b/train.py\n",
    "python": "3.11.9",
    "packages": ["torch==2.4.0", "numpy==2.0.1"],
    "host": "gpu-box",
}


def _open(api: Api, token: str | None = None, project_id: int = 1, **body: Any) -> Any:
    return api.client.post(f"/api/v1/projects/{project_id}/runs/external", json=body, headers=api.h(token))


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _reap(api: Api, timeout: float) -> list[tuple[int, str]]:
    factory = session_factory(get_engine(api.settings.database_url))
    with session_scope(factory) as s:
        return service.reap(s, timeout_seconds=timeout)


def test_a_member_opens_an_external_run_and_drives_it_with_its_token(api: Api) -> None:
    member = api.user("meg", role="member")
    got = _open(
        api,
        member,
        experiment="my script",
        name="baseline",
        config={"lr": 0.1, "model": {"layers": 4}},
        tags=["sdk", "baseline"],
        provenance=PROVENANCE,
    )
    assert got.status_code == 201, got.text
    run = got.json()
    assert (run["kind"], run["status"], run["name"], run["attempt"]) == ("external", "running", "baseline", 1)
    assert run["spec"] == {"lr": 0.1, "model": {"layers": 4}} and run["tags"] == ["baseline", "sdk"]
    assert run["resumed"] is False and run["last_step"] is None
    url, token = f"/api/v1/runs/{run['id']}", _bearer(run["run_token"])
    points = [{"key": "loss", "step": s, "value": 1.0 / (s + 1)} for s in range(5)]
    assert api.client.post(f"{url}/metrics", json={"points": points, "attempt": 1}, headers=token).json() == {
        "accepted": 5
    }
    assert api.client.post(f"{url}/heartbeat", json={"attempt": 1}, headers=token).status_code == 200
    assert (
        api.client.post(f"{url}/params", json={"params": {"n_params": 12}}, headers=token).status_code == 204
    )
    done = api.client.post(f"{url}/finish", json={"attempt": 1, "status": "succeeded"}, headers=token)
    assert done.status_code == 200 and done.json()["status"] == "succeeded"
    # the experiment was created with the external kind, and a second run goes into it as #2
    second = _open(api, member, experiment="my script").json()
    assert second["experiment_id"] == run["experiment_id"] and second["index"] == 1
    experiment = api.client.get(f"/api/v1/experiments/{run['experiment_id']}", headers=api.h()).json()
    assert experiment["kind"] == "external"
    # its provenance, for anyone in the project; a worker's run has none
    viewer = api.user("vic", role="viewer")
    assert api.client.get(f"{url}/provenance", headers=api.h(viewer)).json() == {
        **PROVENANCE,
        "mlflow_tags": {},
    }
    worker_run = api.submit({}).json()["runs"][0]["id"]
    assert api.client.get(f"/api/v1/runs/{worker_run}/provenance", headers=api.h()).json() is None


def test_a_viewer_cannot_open_one_and_another_project_is_404(api: Api) -> None:
    viewer = api.user("vic", role="viewer")
    assert _open(api, viewer).status_code == 403
    outsider = api.user("ozzie", project="elsewhere")
    assert _open(api, outsider).status_code == 404
    assert _open(api, project_id=999_999).status_code == 404  # a project that does not exist


def test_an_external_run_token_reaches_its_own_run_only(api: Api) -> None:
    mine = _open(api).json()
    other = _open(api).json()
    token = _bearer(mine["run_token"])
    point = {"points": [{"key": "x", "step": 0, "value": 1.0}], "attempt": 1}
    assert (
        api.client.post(f"/api/v1/runs/{other['id']}/metrics", json=point, headers=token).status_code == 403
    )
    assert api.client.get(f"/api/v1/runs/{other['id']}", headers=token).status_code == 403
    assert api.client.post(f"/api/v1/runs/{mine['id']}/metrics", json=point, headers=token).status_code == 200
    # it cannot open runs itself, nor list the project's
    assert _open(api, mine["run_token"]).status_code == 403
    assert api.client.get("/api/v1/runs", headers=token).status_code == 403


def test_a_silent_external_run_is_failed_as_crashed_and_resumed_with_must(api: Api) -> None:
    run = _open(api, config={"seed": 1}).json()
    url, token = f"/api/v1/runs/{run['id']}", _bearer(run["run_token"])
    points = [{"key": "loss", "step": s, "value": 1.0} for s in range(8)]
    api.client.post(f"{url}/metrics", json={"points": points, "attempt": 1}, headers=token)
    time.sleep(0.3)
    assert _reap(api, 0.1) == [(run["id"], "failed")]
    got = api.client.get(url, headers=api.h()).json()
    assert got["status"] == "failed" and got["error"] == "crashed: no heartbeat for 0 s"
    assert got["attempt"] == 1  # never requeued: no worker can run it
    assert api.client.post(f"{url}/retry", headers=api.h()).status_code == 409
    # its script comes back: a new attempt and token, steps going on after the last
    back = _open(api, id=run["id"], resume="must", provenance={"host": "other-box"})
    assert back.status_code == 201, back.text
    again = back.json()
    assert (again["status"], again["attempt"], again["resumed"], again["last_step"]) == (
        "running",
        2,
        True,
        7,
    )
    assert again["error"] is None and again["finished_at"] is None
    new = _bearer(again["run_token"])
    more = {"points": [{"key": "loss", "step": 8, "value": 0.5}], "attempt": 2}
    assert api.client.post(f"{url}/metrics", json=more, headers=new).status_code == 200
    # the crashed attempt's token died with its attempt
    stale = {"points": [{"key": "loss", "step": 9, "value": 0.5}], "attempt": 1}
    assert api.client.post(f"{url}/metrics", json=stale, headers=token).status_code == 409
    history = api.client.get(f"{url}/attempts", headers=api.h()).json()
    assert [a["outcome"] for a in history] == ["lost", "running"]
    provenance = api.client.get(f"{url}/provenance", headers=api.h()).json()
    assert provenance["host"] == "other-box" and provenance["command"] is None  # the new attempt's
    # a live run resumed again (its script restarted before the reaper noticed): that attempt is lost
    third = _open(api, id=run["id"], resume="allow").json()
    assert third["attempt"] == 3 and third["last_step"] == 8
    assert api.client.post(f"{url}/heartbeat", json={"attempt": 2}, headers=new).status_code == 409


def test_resume_rules_are_checked(api: Api) -> None:
    run = _open(api).json()
    assert _open(api, id=run["id"]).status_code == 422  # resume "never" takes no id
    assert _open(api, resume="must").status_code == 422  # "must" needs one
    assert _open(api, id=999_999, resume="must").status_code == 404
    worker_run = api.submit({}).json()["runs"][0]["id"]
    assert _open(api, id=worker_run, resume="must").status_code == 409  # a worker's run is not a script's
    outsider = api.user("ozzie", project="elsewhere")
    elsewhere = _open(api, outsider, project_id=2).json()
    assert _open(api, id=elsewhere["id"], resume="must").status_code == 404  # another project's run
    # allow without an id opens a new run
    assert _open(api, resume="allow").json()["resumed"] is False


def test_bounds_of_what_a_script_sends(api: Api) -> None:
    assert _open(api, config={"blob": "x" * 300_000}).status_code == 422
    assert _open(api, provenance={"git_diff": "x" * 200_001}).status_code == 422
    assert _open(api, provenance={"packages": ["p==1"] * 2001}).status_code == 422
    assert _open(api, provenance={"git_commit": "not hex"}).status_code == 422
    assert _open(api, config=[1, 2]).status_code == 422  # a config is a JSON object


def test_release_of_an_external_run_is_refused(api: Api) -> None:
    run = _open(api).json()
    token = _bearer(run["run_token"])
    assert (
        api.client.post(f"/api/v1/runs/{run['id']}/release", json={"attempt": 1}, headers=token).status_code
        == 409
    )
    # cancel asks the script to stop (its heartbeat answers cancel_requested), as for a worker's run
    assert api.client.post(f"/api/v1/runs/{run['id']}/cancel", headers=api.h()).status_code == 200
    beat = api.client.post(f"/api/v1/runs/{run['id']}/heartbeat", json={"attempt": 1}, headers=token)
    assert beat.json() == {"cancel_requested": True}


def test_a_named_group_is_the_runs_seed_group_as_the_runs_say(api: Api) -> None:
    """The group key each run carries (what the Compare page groups by) is the runs page's grouping: a
    named group's runs share it whatever their configs, two names with one config do not, and without a
    name the config without seeds is the group, as a spec is for a worker's run."""

    def key(**body: Any) -> str:
        run = _open(api, experiment="grouped", **body).json()
        got: str = api.client.get(f"/api/v1/runs/{run['id']}", headers=api.h()).json()["group_key"]
        return got

    a1 = key(group="A", config={"lr": 0.1, "seed": 1})
    a2 = key(group="A", config={"lr": 0.3, "seed": 2})
    b1 = key(group="B", config={"lr": 0.1, "seed": 1})
    plain1, plain2 = key(config={"lr": 0.1, "seed": 1}), key(config={"lr": 0.1, "seed": 2})
    assert a1 == a2 and a1 != b1 and plain1 == plain2 and plain1 not in (a1, b1)
    groups = api.client.get(
        "/api/v1/runs",
        params={"project": "default", "q": 'kind = "external"', "group_by": "default"},
        headers=api.h(),
    ).json()["groups"]
    assert sorted(g["n"] for g in groups) == [1, 2, 2]
    worker = api.submit({}).json()["runs"][0]
    assert worker["group_key"] and len(worker["group_key"]) == 64
