"""A run gets a project secret from the API with its own token, and the value never reaches what
the run records (logs, params, results, its error); ``reasonlab run`` reads REASONLAB_SECRET_<NAME>."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from tests.worker.worker_fake_api import FakeApi
from worker.tracking.context import RunError
from worker.tracking.redact import MASK, Redactor
from worker.tracking.tracked import ApiRunContext, LocalRunContext
from worker.tracking.writer import WriterOptions

KEY = "sk-test-4f9a1c2e7b"
FAST = WriterOptions(flush_interval=0.05, backoff_initial=0.01, backoff_max=0.05)


def test_redactor_masks_every_string_longest_first() -> None:
    r = Redactor()
    r.add("abc")  # too short to mask safely
    r.add(KEY)
    r.add(KEY + "-extended")
    assert r.text(f"key={KEY}-extended and {KEY}") == f"key={MASK} and {MASK}"
    assert r.value({"a": [KEY, 1, {KEY: "x"}], "b": "abc"}) == {"a": [MASK, 1, {MASK: "x"}], "b": "abc"}


def test_an_api_run_gets_its_secret_and_records_it_nowhere(tmp_path: Path) -> None:
    fake = FakeApi(run_id=7)
    fake.run.update(status="running")
    fake.secrets["GRADER_KEY"] = KEY
    with fake.run_client() as client:
        ctx = ApiRunContext(client, 7, 1, seed=0, device="cpu", artifact_root=tmp_path, options=FAST)
        assert ctx.secret("GRADER_KEY") == KEY
        with pytest.raises(RunError, match="OTHER"):
            ctx.secret("OTHER")
        ctx.log(f"Authorization: Bearer {KEY}")
        ctx.log_params({"endpoint": {"headers": {"Authorization": f"Bearer {KEY}"}}})
        ctx.log_result({"kind": "free_text", "text": f"echo: {KEY}"})  # no schema: sent as it is
        ctx.close("failed")
    recorded: list[Any] = [fake.logs, fake.results, fake.patches, fake.requests, fake.param_posts]
    assert KEY not in repr(recorded)
    assert any(MASK in line for line in fake.logs)
    assert fake.params == {"endpoint.headers.Authorization": f"Bearer {MASK}"}


def test_a_local_run_reads_the_secret_from_its_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ctx = LocalRunContext(tmp_path / "out", device="cpu", options=FAST)
    with pytest.raises(RunError, match="REASONLAB_SECRET_GRADER_KEY"):
        ctx.secret("GRADER_KEY")
    monkeypatch.setenv("REASONLAB_SECRET_GRADER_KEY", KEY)
    assert ctx.secret("GRADER_KEY") == KEY
    ctx.log(f"using {KEY}")
    ctx.close("succeeded")
    written = "".join(
        p.read_text() for p in (tmp_path / "out").rglob("*") if p.is_file() and p.suffix != ".pt"
    )
    assert KEY not in written
    logging.getLogger(__name__).info("done")
