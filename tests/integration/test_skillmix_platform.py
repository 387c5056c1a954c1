"""Skill-Mix through the whole platform: a tiny MoE student swept over ept x k by a real worker, graded by
a scripted grader served over real HTTP that speaks the OpenAI chat-completions API (its first answer to
each prompt is garbage, so every grading is retried), the 422s of bad specs, and the grader's API key
searched for, and not found, in every log, stored spec, result, the database and the MLflow store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reasonlab_sdk.client import Invalid
from tests.integration.platform import Platform
from tests.skillmix_grader import Script, serve
from tests.tiny_moe import tiny_moe

pytestmark = pytest.mark.slow
KEY = "sk-skillmix-e2e-KEY-7f3a9c1d5e"
KEY_NAME = "SKILLMIX_E2E_GRADER_KEY"


def _invalid(platform: Platform, spec: dict[str, Any]) -> list[tuple[Any, ...]]:
    with pytest.raises(Invalid) as info:
        platform.client.create_experiment("bad", "skillmix", spec)
    return [tuple(e["loc"]) for e in info.value.errors]


@pytest.mark.mlflow_mirror
def test_ept_by_k_sweep_graded_over_http_and_the_key_is_nowhere(
    embedded_platform: Platform, tmp_path: Path
) -> None:
    p = embedded_platform
    p.env[KEY_NAME] = "not-the-key-0000"  # a worker's environment variable is no key source any more
    # the scripted grader listens on 127.0.0.1: reachable only under the admin's explicit opt-in
    p.env["REASONLAB_OUTBOUND_ALLOW"] = "127.0.0.1"
    p.env["REASONLAB_OUTBOUND_ALLOW_PRIVATE"] = "1"
    p.env["REASONLAB_CACHE"] = str(tmp_path / "cache")  # the worker's stores (docs/spec-confinement.md)
    p.start_api()
    endpoint_without_key = {"url": "http://127.0.0.1:1/v1", "model": "g"}
    assert _invalid(p, {"ept": 0}) == [("body", "spec", "ept")]
    assert _invalid(p, {"k": 0}) == [("body", "spec", "k")]
    endpoint_with_env = {**endpoint_without_key, "api_key_env": KEY_NAME}
    assert ("body", "spec", "grader", "endpoint", "api_key_env") in _invalid(
        p, {"grader": {"type": "endpoint", "endpoint": endpoint_with_env}}
    )
    # a secret the project does not have is refused at submission, naming the field
    endpoint_with_secret = {**endpoint_without_key, "api_key_secret": KEY_NAME}
    assert ("body", "spec", "grader", "endpoint", "api_key_secret") in _invalid(
        p, {"grader": {"type": "endpoint", "endpoint": endpoint_with_secret}}
    )
    project = p.client.list_projects()[0]["id"]
    p.client.set_secret(project, KEY_NAME, KEY)  # the project admin sets it once
    assert _invalid(p, {"student": {"name": "mistralai/Mixtral-8x7B-Instruct-v0.1"}, "ept": 9}) == [
        ("body", "spec", "ept")
    ]

    tiny_moe(tmp_path / "cache" / "models" / "e2e" / "tiny-mixtral", "mixtral")
    student = "e2e/tiny-mixtral"  # a folder of the worker's model store, named relative to it
    script = Script(key=KEY, garbage_first=1, table_style="yesno")
    cache = tmp_path / "cache" / "skillmix" / "e2e"  # the cache the spec names: "e2e"
    with serve(script) as url:
        spec = {
            "student": {"name": student},
            "combinations": 2,
            "generations": 2,
            "gradings": 3,
            "generation": {"max_new_tokens": 6},
            "grader": {
                "type": "endpoint",
                "endpoint": {
                    "url": url,
                    "model": "scripted-gpt",
                    "api_key_secret": KEY_NAME,
                    "max_retries": 2,
                },
            },
            "cache": {"dir": "e2e"},
        }
        # a secret set without hosts is sent nowhere: a 422 at its field until the admin names
        # the grader's URL as one of its hosts
        assert ("body", "spec", "grader", "endpoint", "api_key_secret") in _invalid(p, spec)
        p.client.set_secret_hosts(project, KEY_NAME, [url])
        p.start_worker()
        exp = p.client.create_experiment(
            "skillmix-e2e", "skillmix", spec, {"grid": {"ept": [1, 4], "k": [1, 2]}}
        )
        runs = p.wait_finished([r["id"] for r in exp["runs"]], timeout=600)
    assert [r["status"] for r in runs] == ["succeeded"] * 4, p.diagnostics()
    p.wait_mirrored([r["id"] for r in runs])  # the API's MLflow mirror: in the store searched below too
    runs = [p.client.get_run(r["id"]) for r in runs]

    cells = p.client.get_experiment_results(exp["id"], kind="skillmix_cell")
    assert {(c["payload"]["ept"], c["payload"]["k"]) for c in cells} == {(1, 1), (1, 2), (4, 1), (4, 2)}
    for c in cells:
        payload = c["payload"]
        assert payload["default_ept"] == 2 and payload["num_experts"] == 4 and payload["renormalises"] is True
        assert payload["grader"] == "endpoint:scripted-gpt" and payload["failed_gradings"] == 0
        assert payload["total_gradings"] == 2 * 2 * 3
        assert all(len(points) == payload["k"] + 3 for s in payload["samples"] for points in s["points"])
    # every grading prompt's first answer was garbage and was asked again; the student never asked it.
    # A grading already asked in another cell (same text, same round) came from the shared cache: the
    # gradings the server answered are exactly the new ones (new replies less the 2 x 2 x 2 student turns)
    assert all(r["model"] == "scripted-gpt" for r in script.requests)
    new_gradings = sum(c["payload"]["new_replies"] - 8 for c in cells)
    answered = sum(script.seen.values()) - len(script.seen)
    if all(r["attempt"] == 1 for r in runs):
        assert answered == new_gradings > 0
    else:  # a run reaped on a loaded machine ran again: its second attempt found its first's replies cached
        assert answered >= new_gradings > 0
    assert "full_marks" in p.client.metric_keys(runs[0]["id"])
    # a point per combination graded (the run page's charts draw lines, not one dot at step 0): steps 1
    # and 2 of the 2 combinations, the last one the cell's own values
    by_run = {c["run_id"]: c["payload"] for c in cells}
    for run in runs:
        keys = ["full_marks", "skill_fraction", "new_replies", "cached_replies"]
        series = p.client.get_metrics(run["id"], keys)["series"]
        for key in keys:
            got = series[key]
            assert (got["total_points"], got["step_min"], got["step_max"]) == (2, 1, 2), key
        last = {key: series[key]["buckets"][-1] for key in keys}
        assert last["full_marks"]["step_end"] == 2
        assert last["full_marks"]["last"] == pytest.approx(by_run[run["id"]]["full_marks"]["mean"])
        assert last["new_replies"]["last"] == by_run[run["id"]]["new_replies"]

    # the key: nowhere in what the API serves ...
    served: list[Any] = [p.client.get_experiment(exp["id"]), cells]
    for run in runs:
        served += [p.client.get_run(run["id"]), p.client.get_results(run["id"]), p.client.get_logs(run["id"])]
        assert run["mlflow_run_id"], "the runs are mirrored to MLflow"
    text = json.dumps(served)
    assert KEY_NAME in text and KEY not in text
    assert KEY not in json.dumps(p.client.list_secrets(project))
    # ... nor in any file of the platform (database, logs, artifacts, MLflow's store) or the cache
    files = [f for root in (p.home, cache) for f in root.rglob("*") if f.is_file()]
    assert any(f.name == "mlflow.db" for f in files) and any(f.suffix == ".log" for f in files)
    leaks = [str(f) for f in files if KEY.encode() in f.read_bytes()]
    assert leaks == []
