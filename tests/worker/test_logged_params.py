"""ctx.log_params on the platform: the parameters a kind logs itself (derived values such as parameter
counts) reach the run's ``logged_params`` through POST /runs/{id}/params, flattened, with the run's
secrets masked; a value the API refuses is dropped with a warning line and the rest are stored."""

from __future__ import annotations

import math
from pathlib import Path

from tests.worker.worker_fake_api import FakeApi
from worker.tracking.redact import MASK
from worker.tracking.tracked import ApiRunContext
from worker.tracking.writer import WriterOptions

KEY = "sk-test-4f9a1c2e7b"
FAST = WriterOptions(flush_interval=0.05, backoff_initial=0.01, backoff_max=0.05)


def _context(fake: FakeApi, tmp_path: Path) -> ApiRunContext:
    fake.run.update(status="running")
    return ApiRunContext(fake.run_client(), 7, 1, seed=0, device="cpu", artifact_root=tmp_path, options=FAST)


def test_logged_params_reach_the_api_flattened_and_redacted(tmp_path: Path) -> None:
    fake = FakeApi(run_id=7)
    fake.secrets["GRADER_KEY"] = KEY
    ctx = _context(fake, tmp_path)
    assert ctx.secret("GRADER_KEY") == KEY
    params = {"lr": 0.1, "derived": {"parameters": 1234, "layers": [1, 2], "auth": f"Bearer {KEY}"}}
    ctx.log_params(params)
    params["lr"] = 9.0  # the kind's dict changed after logging: what was logged stays
    ctx.log_params({"derived": {"parameters": 99}, "loss_at_start": math.nan, "text": "a\x00b"})
    ctx.close("succeeded")
    assert fake.params == {
        "lr": 0.1,
        "derived.parameters": 99,  # the last value of a key
        "derived.layers": [1, 2],
        "derived.auth": f"Bearer {MASK}",
        "loss_at_start": "NaN",  # JSON has no NaN: its text, as MLflow showed it
        "text": "a\\x00b",  # a NUL the API cannot store, escaped
    }
    assert KEY not in repr(fake.param_posts)
    assert all(post["attempt"] == 1 for post in fake.param_posts)


def test_a_refused_param_is_dropped_with_a_warning_and_the_rest_stored(tmp_path: Path) -> None:
    fake = FakeApi(run_id=7)
    ctx = _context(fake, tmp_path)
    ctx.log_params({"derived": {"parameters": 3, "prompt": "p" * 20_000}})
    ctx.close("succeeded")
    assert fake.params == {"derived.parameters": 3}
    assert any("dropped 1 param" in line and "derived.prompt" in line for line in fake.logs), fake.logs
