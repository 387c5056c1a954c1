"""Specs that name another run as their source (KindManifest.source_runs): the backend checks at
submission (and preview) that the run exists, is visible to the submitter, is of the declared kind and
succeeded, and answers 422 naming the field (under the sweep combination when the field is swept)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import update

from backend.db import get_engine, session_factory, session_scope
from backend.models import Run
from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)

FINETUNE = "reasonformer_finetune"


def _run_id(api: Api, kind: str, project: str | None = None) -> int:
    extra = {"project": project} if project else {}
    r = api.submit({}, kind=kind, **extra)
    assert r.status_code == 201, r.text
    return int(r.json()["runs"][0]["id"])


def _succeed(api: Api, run_id: int) -> None:
    with session_scope(session_factory(get_engine(api.settings.database_url))) as s:
        s.execute(update(Run).where(Run.id == run_id).values(status="succeeded"))


def _errors(r: Any) -> list[tuple[list[Any], str]]:
    assert r.status_code == 422, r.text
    return [(e["loc"], e["type"]) for e in r.json()["errors"]]


def test_finetune_needs_a_finished_pretraining_run(api: Api) -> None:
    loc = ["body", "spec", "init", "run_id"]
    assert _errors(api.submit({"init": {"run_id": 999}}, kind=FINETUNE)) == [(loc, "source_run_not_found")]
    diagnostic = _run_id(api, "diagnostic")
    _succeed(api, diagnostic)
    assert _errors(api.submit({"init": {"run_id": diagnostic}}, kind=FINETUNE)) == [(loc, "source_run_kind")]
    pretrain = _run_id(api, "reasonformer_pretrain")  # queued, not finished
    r = api.submit({"init": {"run_id": pretrain}}, kind=FINETUNE)
    assert _errors(r) == [(loc, "source_run_status")] and "has not succeeded (it is queued)" in r.text
    _succeed(api, pretrain)
    ok = api.submit({"init": {"run_id": pretrain}}, kind=FINETUNE)
    assert ok.status_code == 201, ok.text
    assert ok.json()["runs"][0]["spec"]["init"]["run_id"] == pretrain
    assert api.submit({}, kind=FINETUNE).status_code == 201  # no source run: fresh


def test_a_swept_source_run_is_checked_per_combination_and_in_preview(api: Api) -> None:
    good = _run_id(api, "reasonformer_pretrain")
    _succeed(api, good)
    sweep = {"grid": {"init.run_id": [good, 12345]}}
    assert _errors(api.submit({}, sweep, kind=FINETUNE)) == [
        (["body", "sweep", 1, "init", "run_id"], "source_run_not_found")
    ]
    body = {"name": "x", "kind": FINETUNE, "spec": {}, "sweep": sweep}
    preview = api.client.post("/api/v1/experiments/preview", json=body, headers=api.h())
    assert _errors(preview) == [(["body", "sweep", 1, "init", "run_id"], "source_run_not_found")]
    body["sweep"] = {"grid": {"init.run_id": [good]}}
    assert api.client.post("/api/v1/experiments/preview", json=body, headers=api.h()).status_code == 200


def test_a_run_of_a_project_the_submitter_cannot_see_is_not_found(api: Api) -> None:
    api.user("bob", "member", "secret")  # creates the project
    hidden = _run_id(api, "reasonformer_pretrain", project="secret")
    _succeed(api, hidden)
    token = api.user("alice", "member", "default")
    r = api.client.post(
        "/api/v1/experiments",
        json={"name": "x", "kind": FINETUNE, "spec": {"init": {"run_id": hidden}}},
        headers=api.h(token),
    )
    assert _errors(r) == [(["body", "spec", "init", "run_id"], "source_run_not_found")]
