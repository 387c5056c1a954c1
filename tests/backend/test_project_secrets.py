"""Issue 21, finding 1: keys for graders and endpoints are project secrets, never a worker's environment
variable. Set by a project admin, sealed at rest with a key the workers do not hold, never returned by the
API after being set, handed only to the run whose spec names them."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from backend.db import get_engine, session_factory, session_scope
from backend.models import ProjectSecret, Run
from backend.secrets import crypto
from tests.backend.conftest import WORKER_TOKEN, Api

# SQL is the subject (sealed bytes in a binary column): SQLite and Postgres
pytestmark = pytest.mark.dialect_matrix

VALUE = "sk-live-0123456789abcdefXYZ"
ENDPOINT_HOST = "grader.example.test"  # on the allow-list below; nothing connects to it in these tests


@pytest.fixture(autouse=True)
def _allow_the_test_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REASONLAB_OUTBOUND_ALLOW", ENDPOINT_HOST)


def _skillmix(secret: str | None) -> dict[str, Any]:
    endpoint: dict[str, Any] = {"url": f"https://{ENDPOINT_HOST}/v1", "model": "g"}
    if secret is not None:
        endpoint["api_key_secret"] = secret
    return {"grader": {"type": "endpoint", "endpoint": endpoint}}


def _project_id(api: Api) -> int:
    return int(api.client.get("/api/v1/projects", headers=api.h()).json()[0]["id"])


def _set(api: Api, name: str, value: str = VALUE, token: str | None = None) -> Any:
    pid = _project_id(api)
    return api.client.put(
        f"/api/v1/projects/{pid}/secrets/{name}", json={"value": value}, headers=api.h(token)
    )


def _claim(api: Api, run_id: int) -> dict[str, str]:
    r = api.client.post(
        f"/api/v1/runs/{run_id}/claim",
        json={"worker": "w"},
        headers={"Authorization": f"Bearer {WORKER_TOKEN}"},
    )
    assert r.status_code == 200, r.text
    return {"Authorization": f"Bearer {r.json()['run_token']}"}


def test_an_admin_sets_a_secret_and_no_answer_ever_holds_its_value(api: Api) -> None:
    pid = _project_id(api)
    r = _set(api, "GRADER_KEY")
    assert r.status_code == 200 and r.json()["name"] == "GRADER_KEY" and r.json()["updated_by"] == "admin"
    assert VALUE not in r.text
    listed = api.client.get(f"/api/v1/projects/{pid}/secrets", headers=api.h())
    assert [s["name"] for s in listed.json()] == ["GRADER_KEY"] and VALUE not in listed.text
    # replaced, then deleted
    assert _set(api, "GRADER_KEY", "sk-second-value-000").status_code == 200
    assert api.client.delete(f"/api/v1/projects/{pid}/secrets/GRADER_KEY", headers=api.h()).status_code == 204
    assert api.client.get(f"/api/v1/projects/{pid}/secrets", headers=api.h()).json() == []
    assert api.client.delete(f"/api/v1/projects/{pid}/secrets/GRADER_KEY", headers=api.h()).status_code == 404


def test_only_project_admins_set_secrets_members_see_names_outsiders_nothing(api: Api) -> None:
    pid = _project_id(api)
    member, viewer = api.user("meg"), api.user("vic", role="viewer")
    outsider = api.user("ozzie", project="elsewhere")
    project_admin = api.user("pat", role="admin")
    assert _set(api, "K1", token=member).status_code == 403
    assert _set(api, "K1", token=viewer).status_code == 403
    assert _set(api, "K1", token=outsider).status_code == 404
    assert _set(api, "K1", token=project_admin).status_code == 200
    assert [
        s["name"] for s in api.client.get(f"/api/v1/projects/{pid}/secrets", headers=api.h(viewer)).json()
    ] == ["K1"]
    assert api.client.get(f"/api/v1/projects/{pid}/secrets", headers=api.h(outsider)).status_code == 404
    r = api.client.delete(f"/api/v1/projects/{pid}/secrets/K1", headers=api.h(member))
    assert r.status_code == 403


@pytest.mark.parametrize("name", ["1abc", "a-b", "a b", "x" * 65, "..", "a%2Fb"])
def test_secret_names_are_identifiers(api: Api, name: str) -> None:
    assert _set(api, name).status_code in (404, 422)


def test_values_are_sealed_at_rest_and_bound_to_their_row(api: Api) -> None:
    _set(api, "GRADER_KEY")
    factory = session_factory(get_engine(api.settings.database_url))
    with session_scope(factory) as session:
        secret = session.scalars(select(ProjectSecret)).one()
        assert VALUE not in secret.sealed and secret.sealed.startswith("v1:")
        key = crypto.derive_key(api.settings.secrets_key, api.settings.secret_key)
        assert crypto.open_sealed(key, secret.project_id, "GRADER_KEY", secret.sealed) == VALUE
        with pytest.raises(crypto.SecretKeyError):  # copied under another name or project: does not open
            crypto.open_sealed(key, secret.project_id, "OTHER", secret.sealed)
        with pytest.raises(crypto.SecretKeyError):
            crypto.open_sealed(key, secret.project_id + 1, "GRADER_KEY", secret.sealed)
        # the workers' credentials do not open it: the key is the API's alone
        with pytest.raises(crypto.SecretKeyError):
            crypto.open_sealed(
                crypto.derive_key("", WORKER_TOKEN), secret.project_id, "GRADER_KEY", secret.sealed
            )


def test_a_spec_names_a_secret_the_project_has(api: Api) -> None:
    r = api.submit(_skillmix("GRADER_KEY"), kind="skillmix")
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["loc"] == ["body", "spec", "grader", "endpoint", "api_key_secret"]
    assert "GRADER_KEY" in r.json()["errors"][0]["msg"]
    # an environment variable's name is no longer a field: the old spelling is refused, not ignored
    old = _skillmix(None)
    old["grader"]["endpoint"]["api_key_env"] = "REASONLAB_WORKER_TOKEN"
    r = api.submit(old, kind="skillmix")
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"][-1] == "api_key_env"
    _set(api, "GRADER_KEY")
    assert api.submit(_skillmix("GRADER_KEY"), kind="skillmix").status_code == 201


def test_a_secret_goes_only_to_the_run_whose_spec_names_it(api: Api) -> None:
    _set(api, "GRADER_KEY")
    _set(api, "OTHER_KEY", "sk-other-value-999")
    runs = api.submit(_skillmix("GRADER_KEY"), kind="skillmix", sweep={"grid": {"seed": [1, 2]}}).json()[
        "runs"
    ]
    plain = api.submit({}).json()["runs"][0]
    h = _claim(api, runs[0]["id"])
    url = f"/api/v1/runs/{runs[0]['id']}/secrets"
    r = api.client.get(f"{url}/GRADER_KEY", headers=h)
    assert r.status_code == 200 and r.json() == {"name": "GRADER_KEY", "value": VALUE}
    assert api.client.get(f"{url}/OTHER_KEY", headers=h).status_code == 403  # not named by its spec
    # nobody else: not the other run of the sweep (its own token), a run without it, a user, the worker
    h2 = _claim(api, runs[1]["id"])
    assert api.client.get(f"{url}/GRADER_KEY", headers=h2).status_code == 403
    h3 = _claim(api, plain["id"])
    assert api.client.get(f"/api/v1/runs/{plain['id']}/secrets/GRADER_KEY", headers=h3).status_code == 403
    assert api.client.get(f"{url}/GRADER_KEY", headers=api.h()).status_code == 403
    worker = {"Authorization": f"Bearer {WORKER_TOKEN}"}
    assert api.client.get(f"{url}/GRADER_KEY", headers=worker).status_code == 403
    # the attempt over, its token reads nothing
    api.client.post(
        f"/api/v1/runs/{runs[0]['id']}/finish", json={"attempt": 1, "status": "failed"}, headers=h
    )
    assert api.client.get(f"{url}/GRADER_KEY", headers=h).status_code == 409


def test_a_spec_edited_in_the_database_still_cannot_reach_another_projects_secret(api: Api) -> None:
    """Secrets are looked up in the run's own project only."""
    other = api.client.post("/api/v1/projects", json={"name": "vault"}, headers=api.h()).json()
    api.client.put(
        f"/api/v1/projects/{other['id']}/secrets/VAULT_KEY", json={"value": VALUE}, headers=api.h()
    )
    _set(api, "GRADER_KEY")
    run = api.submit(_skillmix("GRADER_KEY"), kind="skillmix").json()["runs"][0]
    factory = session_factory(get_engine(api.settings.database_url))
    with session_scope(factory) as session:
        spec = _skillmix("VAULT_KEY")
        stored = session.get(Run, run["id"])
        assert stored is not None
        stored.spec = {**stored.spec, "grader": {**stored.spec["grader"], **spec["grader"]}}
    h = _claim(api, run["id"])
    r = api.client.get(f"/api/v1/runs/{run['id']}/secrets/VAULT_KEY", headers=h)
    assert r.status_code == 404 and VALUE not in r.text
