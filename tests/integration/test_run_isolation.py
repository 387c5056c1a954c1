"""What a run's process holds, seen from inside a run of a real `reasonlab worker` (Postgres,
Redis, a real Celery worker process). A probe kind, registered as a plugin, reads its own environment
(``os.environ`` and ``/proc/self/environ``) and tries its run token on another run and on project-level
routes; the test then looks for every service credential the worker was started with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.platform import WORKER_TOKEN, Platform

pytestmark = pytest.mark.slow

PACKAGE = "probe_kind"
SPEC_MODULE = """
from typing import Literal

from pydantic import Field

from worker.specs import KindManifest, SpecBase, StrictModel


class ProbeSpec(SpecBase):
    kind: Literal["probe"] = "probe"
    other_run: int = Field(0, ge=0, description="a run of the same project the probe must not reach")


class ProbeReport(StrictModel):
    kind: Literal["probe_report"] = "probe_report"
    environ: dict[str, str]
    proc_environ: str
    answers: dict[str, int]


MANIFEST = KindManifest(
    name="probe",
    description="reports what its process can see (a test kind)",
    spec=ProbeSpec,
    results=(ProbeReport,),
    examples=(),
    runner="probe_kind.run:run",
)
"""
RUN_MODULE = """
import os

from probe_kind.spec import ProbeReport


def run(spec, ctx) -> None:
    with open("/proc/self/environ", "rb") as f:
        proc = f.read().decode(errors="replace").replace("\\0", "\\n")
    client = ctx._client  # the run's own API client: what a compromised kind would hold
    answers = {}
    calls = {
        "own run": ("GET", f"/runs/{ctx.run_id}"),
        "other run": ("GET", f"/runs/{spec.other_run}"),
        "other run metrics": ("GET", f"/runs/{spec.other_run}/metric-keys"),
        "other run heartbeat": ("POST", f"/runs/{spec.other_run}/heartbeat"),
        "runs list": ("GET", "/runs"),
        "experiments list": ("GET", "/experiments"),
        "projects": ("GET", "/projects"),
        "me": ("GET", "/auth/me"),
        "claim another": ("POST", f"/runs/{spec.other_run}/claim"),
    }
    for name, (method, path) in calls.items():
        body = {"attempt": 1, "worker": "probe"} if method == "POST" else None
        try:
            client.request(method, path, json_body=body)
            answers[name] = 200
        except Exception as exc:
            answers[name] = int(getattr(exc, "status", 0) or 0)
    ctx.log_result(ProbeReport(environ=dict(os.environ), proc_environ=proc, answers=answers))
"""

# what the worker is started with, each a credential a run must not find in its environment
CREDENTIALS = {
    "REASONLAB_SECRET_KEY": "signing-key-the-workers-should-not-have-0123",
    "REASONLAB_SECRETS_KEY": "c2VhbGluZy1rZXktMzItYnl0ZXMtbG9uZy0wMTIzNDU2Nzg5",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-0123456789abcdef",
    "OPENAI_API_KEY": "sk-openai-0123456789abcdef",
    "HF_TOKEN": "hf_0123456789abcdef",
}


def _write_probe(root: Path) -> str:
    package = root / PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "spec.py").write_text(SPEC_MODULE)
    (package / "run.py").write_text(RUN_MODULE)
    return f"{PACKAGE}.spec"


def test_a_runs_process_holds_no_service_credential_and_its_token_reaches_its_run_only(
    tmp_path: Path, pg_platform: Platform
) -> None:
    p = pg_platform
    module = _write_probe(tmp_path / "plugins")
    p.env["PYTHONPATH"] = f"{tmp_path / 'plugins'}:{p.env.get('PYTHONPATH', '')}"
    p.env["REASONLAB_KIND_PLUGINS"] = module
    p.start_api()
    other = p.client.create_experiment("other", "diagnostic", {"train": {"steps": 2}})["runs"][0]
    p.client.cancel_run(other["id"])  # queued and cancelled: nothing will claim it
    p.start_worker(env=CREDENTIALS)
    exp = p.client.create_experiment("probe", "probe", {"other_run": other["id"]})
    (run,) = p.wait_finished([r["id"] for r in exp["runs"]], timeout=180)
    assert run["status"] == "succeeded", p.diagnostics()
    (report,) = p.client.get_results(run["id"], kind="probe_report")
    seen = report["payload"]

    secrets = {
        **CREDENTIALS,
        "REASONLAB_WORKER_TOKEN": WORKER_TOKEN,
        "REASONLAB_DATABASE_URL": p.env["REASONLAB_DATABASE_URL"],
        "REASONLAB_BROKER_URL": p.env["REASONLAB_BROKER_URL"],
    }
    for name, value in secrets.items():
        assert name not in seen["environ"], name
        assert value not in seen["proc_environ"], name
        assert value not in repr(seen["environ"]), name
    # what a run needs is still there
    assert seen["environ"]["REASONLAB_API_URL"] == p.api_url
    assert "PATH" in seen["environ"]

    answers = seen["answers"]
    assert answers["own run"] == 200
    for name in (
        "other run",
        "other run metrics",
        "other run heartbeat",
        "runs list",
        "experiments list",
        "projects",
        "me",
        "claim another",
    ):
        assert answers[name] == 403, (name, answers)


def test_a_hostile_path_stored_before_the_checks_is_refused_by_the_worker(pg_platform: Platform) -> None:
    """Finding 2 on a real worker: a skillmix spec whose ``data.topics`` names ``/proc/self/environ`` is a
    422 at submission; one already stored (written before the checks existed, or edited in the database)
    fails on the worker naming the field, before any file is read."""
    from sqlalchemy import update

    from backend.db import get_engine
    from backend.models import Run
    from reasonlab_sdk.client import Invalid

    p = pg_platform
    p.start_api()
    hostile = {"data": {"topics": "/proc/self/environ"}}
    with pytest.raises(Invalid) as refused:
        p.client.create_experiment("hostile", "skillmix", hostile)
    assert [tuple(e["loc"]) for e in refused.value.errors] == [("body", "spec", "data", "topics")]

    run = p.client.create_experiment("stored", "skillmix", {})["runs"][0]
    with get_engine(p.settings.database_url).begin() as conn:
        stored = conn.execute(Run.__table__.select().where(Run.id == run["id"])).one()
        spec = {**stored.spec, "data": {**stored.spec.get("data", {}), "topics": "/proc/self/environ"}}
        conn.execute(update(Run).where(Run.id == run["id"]).values(spec=spec))
    p.start_worker()
    (final,) = p.wait_finished([run["id"]], timeout=180)
    assert final["status"] == "failed", p.diagnostics()
    assert "data.topics" in (final["error"] or ""), final["error"]
    logs = json.dumps(p.client.get_logs(run["id"]))
    assert "REASONLAB_" not in logs and "PATH=" not in logs
