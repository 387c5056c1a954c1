"""Keys for graders and endpoints are project secrets, never a worker's environment
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


def _set(
    api: Api, name: str, value: str = VALUE, token: str | None = None, hosts: list[str] | None = None
) -> Any:
    pid = _project_id(api)
    body = {"value": value, "hosts": [ENDPOINT_HOST] if hosts is None else hosts}
    return api.client.put(f"/api/v1/projects/{pid}/secrets/{name}", json=body, headers=api.h(token))


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
    assert r.status_code == 200 and r.json() == {
        "name": "GRADER_KEY",
        "value": VALUE,
        "hosts": [ENDPOINT_HOST],
    }
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
        f"/api/v1/projects/{other['id']}/secrets/VAULT_KEY",
        json={"value": VALUE, "hosts": [ENDPOINT_HOST]},
        headers=api.h(),
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


# -- a secret is sent only to the hosts its admin set with it ------------------------------------------------

MEMBERS_HOST = "collector.example.test"  # a member's own endpoint, on the outbound allow-list too


def _spec_to(host: str, secret: str = "OPENAI_API_KEY") -> dict[str, Any]:
    endpoint = {"url": f"https://{host}/v1", "model": "gpt-4", "api_key_secret": secret}
    return {"grader": {"type": "endpoint", "endpoint": endpoint}}


SECRET_FIELD = ["body", "spec", "grader", "endpoint", "api_key_secret"]


def test_a_member_cannot_send_a_secret_to_an_endpoint_outside_its_hosts(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe's case: a member names the project's key and an endpoint of their own, which the outbound
    policy allows. A 422 at the secret's field, naming where it may go; to the admin's host, accepted."""
    monkeypatch.setenv("REASONLAB_OUTBOUND_ALLOW", f"{ENDPOINT_HOST},{MEMBERS_HOST}")
    assert _set(api, "OPENAI_API_KEY", hosts=[ENDPOINT_HOST]).status_code == 200
    member = api.user("mallory")
    r = api.submit(_spec_to(MEMBERS_HOST), kind="skillmix", token=member)
    assert r.status_code == 422, r.text
    error = r.json()["errors"][0]
    assert error["loc"] == SECRET_FIELD and error["type"] == "secret_host"
    assert ENDPOINT_HOST in error["msg"] and MEMBERS_HOST in error["msg"] and VALUE not in r.text
    # a sweep over the URL: the combination that leaves the hosts is the one named
    sweep = {"grid": {"grader.endpoint.url": [f"https://{ENDPOINT_HOST}/v1", f"https://{MEMBERS_HOST}/v1"]}}
    r = api.submit(_spec_to(ENDPOINT_HOST), kind="skillmix", token=member, sweep=sweep)
    assert r.status_code == 422 and r.json()["errors"][0]["type"] == "secret_host", r.text
    assert len(r.json()["errors"]) == 1
    # members may name a secret: to its hosts
    assert api.submit(_spec_to(ENDPOINT_HOST), kind="skillmix", token=member).status_code == 201


def test_a_secret_without_hosts_goes_nowhere_until_an_admin_names_them(api: Api) -> None:
    """A secret set without hosts (as every secret from before migration 0028) may be sent nowhere; the
    admin names its hosts without sending the value again, and replacing the value keeps them."""
    pid = _project_id(api)
    url = f"/api/v1/projects/{pid}/secrets/OPENAI_API_KEY"
    r = api.client.put(url, json={"value": VALUE}, headers=api.h())
    assert r.status_code == 200 and r.json()["hosts"] == []
    r = api.submit(_spec_to(ENDPOINT_HOST), kind="skillmix")
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == SECRET_FIELD
    assert "no host yet" in r.json()["errors"][0]["msg"]
    # only a project admin names them
    member = api.user("meg")
    assert api.client.patch(url, json={"hosts": [ENDPOINT_HOST]}, headers=api.h(member)).status_code == 403
    r = api.client.patch(url, json={"hosts": [ENDPOINT_HOST, ENDPOINT_HOST]}, headers=api.h())
    assert r.status_code == 200 and r.json()["hosts"] == [ENDPOINT_HOST] and VALUE not in r.text
    assert api.submit(_spec_to(ENDPOINT_HOST), kind="skillmix").status_code == 201
    r = api.client.put(url, json={"value": "sk-rotated-000"}, headers=api.h())
    assert r.json()["hosts"] == [ENDPOINT_HOST]
    listed = api.client.get(f"/api/v1/projects/{pid}/secrets", headers=api.h(member)).json()
    assert [(s["name"], s["hosts"]) for s in listed] == [("OPENAI_API_KEY", [ENDPOINT_HOST])]
    assert (
        api.client.patch(
            f"/api/v1/projects/{pid}/secrets/NOPE", json={"hosts": []}, headers=api.h()
        ).status_code
        == 404
    )


@pytest.mark.parametrize(
    "hosts, index",
    [
        (["api.openai.com", "ftp://files.example.com/"], 1),
        (["https://user:pw@api.example.com/"], 0),
        (["*.com"], 0),
        (["10.1"], 0),
        (["https://api.example.com/v1?key=1"], 0),
        (["https://169.254.169.254/"], 0),
    ],
)
def test_hosts_that_are_no_hosts_are_422s_at_the_entry(api: Api, hosts: list[str], index: int) -> None:
    r = _set(api, "K", hosts=hosts)
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["loc"] == ["body", "hosts", index]
    r = api.client.patch(
        f"/api/v1/projects/{_project_id(api)}/secrets/K", json={"hosts": hosts}, headers=api.h()
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "hosts", index]
    r = _set(api, "K", hosts=["h.example.com"] * 33)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "hosts"]


def test_a_run_gets_its_secret_with_its_hosts_and_not_once_they_no_longer_cover_its_spec(api: Api) -> None:
    """The run's token reads the value with the hosts (the worker checks each call against them); an admin
    who narrows the hosts after the submission stops the runs that have not read it yet."""
    _set(api, "GRADER_KEY", hosts=[f"https://{ENDPOINT_HOST}/v1"])
    run = api.submit(_skillmix("GRADER_KEY"), kind="skillmix").json()["runs"][0]
    h = _claim(api, run["id"])
    url = f"/api/v1/runs/{run['id']}/secrets/GRADER_KEY"
    r = api.client.get(url, headers=h)
    assert r.status_code == 200 and r.json()["hosts"] == [f"https://{ENDPOINT_HOST}/v1"]
    pid = _project_id(api)
    api.client.patch(
        f"/api/v1/projects/{pid}/secrets/GRADER_KEY", json={"hosts": ["api.openai.com"]}, headers=api.h()
    )
    r = api.client.get(url, headers=h)
    assert r.status_code == 403 and "api.openai.com" in r.text and VALUE not in r.text
