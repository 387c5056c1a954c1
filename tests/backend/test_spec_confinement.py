"""A member's hostile spec is a 422 at submission whose ``loc`` names the field (docs/spec-confinement.md):
paths out of the stores, URLs to loopback, private, link-local or metadata addresses in any spelling, hosts
off the admin's allow-list, schemes other than http(s). Nothing is stored, nothing is resolved or connected
(the API never looks a host up to validate a spec)."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from sqlalchemy import func, select

from backend.db import get_engine, session_factory
from backend.models import Experiment
from tests.backend.conftest import Api

ALLOWED = "api.allowed.test"


@pytest.fixture(autouse=True)
def policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REASONLAB_OUTBOUND_ALLOW", ALLOWED)
    monkeypatch.delenv("REASONLAB_OUTBOUND_ALLOW_PRIVATE", raising=False)
    real = socket.getaddrinfo

    def loopback_only(host: Any, *args: Any, **kwargs: Any) -> Any:
        # the database (Postgres on 127.0.0.1) may be looked up; a host from a spec never
        assert host in ("127.0.0.1", "localhost", "::1", None), f"the API resolved {host!r}"
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", loopback_only)


def endpoint(url: str) -> dict[str, Any]:
    return {"grader": {"type": "endpoint", "endpoint": {"url": url, "model": "gpt-4"}}}


CASES: list[tuple[str, dict[str, Any], list[str | int]]] = [
    ("skillmix", {"data": {"topics": "/etc/hostname"}}, ["data", "topics"]),
    ("skillmix", {"data": {"skills": "/proc/self/environ"}}, ["data", "skills"]),
    ("skillmix", {"data": {"topics": "../../../../etc/passwd"}}, ["data", "topics"]),
    ("skillmix", {"cache": {"dir": "/tmp/anywhere"}}, ["cache", "dir"]),
    ("skillmix", {"student": {"name": "/etc"}}, ["student", "name"]),
    ("skillmix", {"student": {"endpoint": {"url": "http://127.0.0.1:6379/", "model": "m"}}}, ["student", "endpoint", "url"]),
    ("skillmix", endpoint("http://169.254.169.254/latest/meta-data/"), ["grader", "endpoint", "url"]),
    ("skillmix", endpoint("http://2130706433:8000/api/v1/health"), ["grader", "endpoint", "url"]),
    ("skillmix", endpoint("http://0x7f.1/"), ["grader", "endpoint", "url"]),
    ("skillmix", endpoint("http://[::ffff:127.0.0.1]/"), ["grader", "endpoint", "url"]),
    ("skillmix", endpoint("http://[fd00:ec2::254]/"), ["grader", "endpoint", "url"]),
    ("skillmix", endpoint("http://metadata.google.internal/"), ["grader", "endpoint", "url"]),
    ("skillmix", endpoint("http://10.0.0.7/v1"), ["grader", "endpoint", "url"]),
    ("skillmix", endpoint("file:///etc/passwd"), ["grader", "endpoint", "url"]),
    ("skillmix", endpoint("https://not-on-the-list.example/v1"), ["grader", "endpoint", "url"]),
    ("carma", {"data": {"source": "jsonl", "path": "/etc/passwd"}}, ["data", "path"]),
    ("carma", {"data": {"task": "sc", "source": "hf", "hf_name": "../data"}}, ["data", "hf_name"]),
    ("carma", {"data": {"task": "sc", "source": "hf", "hf_name": "json"}}, ["data", "hf_name"]),
    ("carma", {"synonyms": {"source": "json", "map_path": "~/.aws/credentials"}}, ["synonyms", "map_path"]),
    ("carma", {"model": {"name": "/root/.cache/huggingface"}}, ["model", "name"]),
    ("reasonformer_pretrain", {"data": {"source": "jsonl", "path": "a/../../b.jsonl", "tokenizer": "t"}}, ["data", "path"]),
    ("reasonformer_finetune", {"init": {"path": "/home/someone/model"}}, ["init", "path"]),
    ("reasonformer_finetune", {"model": {"backbone": "file:///etc"}}, ["model", "backbone"]),
    ("topk_eval", {"target": {"type": "hf", "text_path": "/proc/self/environ"}}, ["target", "hf", "text_path"]),
    ("topk_eval", {"target": "hf", "hf": {"text_path": "/proc/self/environ"}}, ["target", "hf", "text_path"]),  # the shape before the union
    ("topk_eval", {"target": {"type": "hf", "model": "../../x"}}, ["target", "hf", "model"]),
    ("topk_eval", {"target": {"type": "smoe_sraven", "path": "/tmp/model"}}, ["target", "smoe_sraven", "path"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "spec", "loc"), CASES, ids=[f"{k}:{'.'.join(map(str, where))}" for k, _, where in CASES]
)
@pytest.mark.heavy
def test_a_member_submitting_a_hostile_spec_gets_422_naming_the_field(
    api: Api, kind: str, spec: dict[str, Any], loc: list[str | int]
) -> None:
    member = api.user("mallory")
    r = api.submit(spec, kind=kind, token=member)
    assert r.status_code == 422, r.text
    assert ["body", "spec", *loc] in [e["loc"] for e in r.json()["errors"]], r.json()
    with session_factory(get_engine(api.settings.database_url))() as s:
        assert s.scalar(select(func.count()).select_from(Experiment)) == 0


def test_a_hostile_value_in_a_sweep_names_the_sweep_axis(api: Api) -> None:
    member = api.user("mallory")
    sweep = {"grid": {"data.topics": ["topics.txt", "/etc/hostname"]}}
    r = api.submit({}, sweep, kind="skillmix", token=member)
    assert r.status_code == 422, r.text
    assert [e["loc"] for e in r.json()["errors"]] == [["body", "sweep", 1, "data", "topics"]]


def test_store_relative_names_and_allowed_hosts_are_accepted(api: Api) -> None:
    member = api.user("alice")
    spec = {
        "data": {"topics": "skillmix/topics.txt"},
        "student": {"name": "Qwen/Qwen1.5-MoE-A2.7B-Chat"},
        "cache": {"dir": "project-a"},
        **endpoint(f"https://{ALLOWED}/v1"),
    }
    r = api.submit(spec, kind="skillmix", token=member)
    assert r.status_code == 201, r.text
    run_spec = r.json()["runs"][0]["spec"]
    assert run_spec["grader"]["endpoint"]["url"] == f"https://{ALLOWED}/v1"
    assert run_spec["data"]["topics"] == "skillmix/topics.txt"
