"""The SMoE paper's findings experiments (examples/findings/smoe.yaml, smoe_paper_scale.yaml,
skillmix_paper_scale.yaml): each file's experiment is a submission of its kind whose every run validates,
with at least 5 seeds; each claim validates with the backend's claim schema and the query checks it gets at
creation, on SQLite's and Postgres's compilers; each arm's query names the experiment and, once the
experiment is submitted, selects the runs of five seeds, disjoint from the claim's other arms; every
claim's metric is a key the kind logs for that spec (the kind run on a shrunk copy); and the paper-scale
claims are the CPU file's but for the runs they select."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from backend.experiments.schemas import ExperimentCreate
from backend.experiments.service import resolve
from tests.backend.conftest import Api
from tests.backend.findings_files import (
    checked_claims,
    experiment_body,
    load,
    without_scale,
)
from tests.worker.kinds.sraven_context import MemoryContext

FILES = ["smoe.yaml", "smoe_paper_scale.yaml", "skillmix_paper_scale.yaml"]
RUNS = {"smoe.yaml": 20, "smoe_paper_scale.yaml": 20, "skillmix_paper_scale.yaml": 30}
EXPERIMENT_KEYS = {"name", "kind", "description", "spec", "sweep"}
GRADER_HOST = "api.openai.com"  # the paper-scale grader (GPT-4): on the admin's allow-list here


@pytest.fixture(autouse=True)
def _grader_host_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REASONLAB_OUTBOUND_ALLOW", GRADER_HOST)


@pytest.mark.parametrize("name", FILES)
def test_the_experiment_is_a_valid_submission_of_its_kind_with_five_seeds(name: str, api: Api) -> None:
    doc = load(name)
    assert set(doc) == EXPERIMENT_KEYS | {"claims"}, set(doc) ^ (EXPERIMENT_KEYS | {"claims"})
    assert len(doc["sweep"]["seeds"]) >= 5 and len(set(doc["sweep"]["seeds"])) == len(doc["sweep"]["seeds"])
    runs = resolve(ExperimentCreate.model_validate(experiment_body(doc)), api.settings)
    assert len(runs) == RUNS[name]
    assert {r.spec["kind"] for r in runs} == {doc["kind"]}
    gpu = "paper_scale" in name
    assert {r.queue for r in runs} == {"gpu" if gpu else "cpu"}


@pytest.mark.parametrize("name", FILES)
def test_each_claim_validates_and_names_its_experiment(name: str) -> None:
    doc = load(name)
    for claim in checked_claims(doc, 2):
        definition = claim.definition
        assert definition.family and definition.section.startswith("004 ")
        assert definition.read.mode == "last"  # each metric is one point per run, or the final evaluation


@pytest.mark.parametrize("name", FILES)
@pytest.mark.heavy
def test_the_arms_select_five_seeds_of_the_submitted_experiment(name: str, api: Api) -> None:
    doc = load(name)
    pid = next(p["id"] for p in api.client.get("/api/v1/projects", headers=api.h()).json())
    if doc["kind"] == "skillmix":  # the grader's key: a project secret sent only to the grader's host
        body = {"value": "sk-test-not-a-real-key-0123", "hosts": [GRADER_HOST]}
        res = api.client.put(f"/api/v1/projects/{pid}/secrets/OPENAI_API_KEY", json=body, headers=api.h())
        assert res.status_code == 200, res.text
    res = api.client.post("/api/v1/experiments", json=experiment_body(doc), headers=api.h())
    assert res.status_code == 201, res.text
    assert len(res.json()["runs"]) == RUNS[name]
    # a second experiment of the same kind the queries must not reach
    other = {**experiment_body(doc), "name": doc["name"] + "-other"}
    assert api.client.post("/api/v1/experiments", json=other, headers=api.h()).status_code == 201
    for raw in doc["claims"]:
        created = api.client.post(f"/api/v1/projects/{pid}/claims", json=raw, headers=api.h())
        assert created.status_code == 201, created.text
        evaluation_ = created.json()["evaluation"]
        assert [a["n"] for a in evaluation_["arms"]] == [0] * len(raw["definition"]["arms"])  # none ran
        seen: set[int] = set()
        for arm in raw["definition"]["arms"]:
            got = api.client.get(
                "/api/v1/runs",
                params={"q": arm["query"], "project": "default", "limit": 100},
                headers=api.h(),
            )
            assert got.status_code == 200, got.text
            items = got.json()["items"]
            assert sorted(r["params"]["seed"] for r in items) == [1, 2, 3, 4, 5], (raw["name"], arm["name"])
            ids = {r["id"] for r in items}
            assert not ids & seen, f"{raw['name']}: arm {arm['name']} shares runs with another arm"
            seen |= ids


def shrunk_topk_eval(spec: dict[str, Any], M: int, attention: str) -> dict[str, Any]:
    """The findings spec at one (M, attention) on a tiny model for a few steps: the same train_k and k',
    so the same metric keys, in seconds."""
    small = copy.deepcopy(spec)
    small.pop("resources", None)
    demo = small["target"]["demo"]
    demo["data"]["num_features"] = M
    demo["model"] = {
        "d_model": 16,
        "num_layers": 1,
        "num_heads": 2,
        "qk_dim": 8,
        "v_dim": 8,
        "attention": attention,
    }
    demo["moe"]["expert_hidden"] = 16
    demo["train"] = {"steps": 2, "batch_size": 8, "warmup_steps": 1, "eval_interval": 2, "eval_size": 16}
    small["target"]["eval_batch_size"] = 16
    return small


@pytest.mark.usefixtures("one_thread")
@pytest.mark.filterwarnings("ignore::worker.core.sraven.generator.OODMissesRuleWarning")
@pytest.mark.parametrize("name", ["smoe.yaml", "smoe_paper_scale.yaml"])
def test_every_smoe_claim_reads_a_metric_the_kind_logs(name: str, tmp_path: Path) -> None:
    from worker.kinds import get_kind
    from worker.specs.smoe.topk_eval import TopkEvalSpec

    doc = load(name)
    spec = TopkEvalSpec.model_validate(shrunk_topk_eval(doc["spec"], M=1, attention="hyla"))
    ctx = MemoryContext(seed=1, out_dir=tmp_path)
    get_kind("topk_eval").run(spec, ctx)
    for claim in doc["claims"]:
        metric = claim["definition"]["metric"]
        assert metric in ctx.metrics, f"{claim['name']}: the kind logs no {metric!r}"
        assert len(ctx.metrics[metric]) >= 1
    # the readings are what their names say: a k of train_k (eval_k), a regret >= 0
    assert ctx.metrics["test_acc/best_train_k"][0] in (1, 2, 4, 8)
    assert ctx.metrics["test_acc/train_k2/best_eval_k"][0] in range(1, 9)
    assert all(v >= 0 for key, series in ctx.metrics.items() if "regret" in key for v in series.values())


@pytest.mark.usefixtures("one_thread")
def test_the_skillmix_claims_read_a_metric_the_kind_logs(tmp_path: Path) -> None:
    """The paper-scale student (Mixtral-8x7B) cannot load here: the same spec with a tiny random Mixtral,
    the rule grader and one short combination logs the keys the claims read."""
    from worker.kinds.skillmix.skillmix import run
    from worker.specs.skillmix.skillmix import SkillmixSpec

    doc = load("skillmix_paper_scale.yaml")
    small = copy.deepcopy(doc["spec"])
    small.update(
        student={"name": "tiny-mixtral"},
        grader={"type": "rules"},
        resources={"device": "cpu"},
        combinations=1,
        generations=1,
        gradings=1,
        generation={"max_new_tokens": 4},
        cache={"enabled": False},
        ept=2,
        k=1,
    )
    ctx = MemoryContext(seed=1, out_dir=tmp_path)
    run(SkillmixSpec.model_validate(small), ctx)
    for claim in doc["claims"]:
        metric = claim["definition"]["metric"]
        assert metric in ctx.metrics and set(ctx.metrics[metric]) == {1}, claim["name"]


def test_the_paper_scale_claims_are_the_cpu_claims_on_their_own_runs() -> None:
    cpu, paper = load("smoe.yaml"), load("smoe_paper_scale.yaml")
    m = (r"num_features = \d+", "num_features = M")  # each scale's easy and hardest M
    assert [without_scale(c, m) for c in paper["claims"]] == [without_scale(c, m) for c in cpu["claims"]]
    assert all(c["name"].endswith(" (paper scale)") for c in paper["claims"])
    # the easy and hardest M of each scale, in the same arms
    easy_hard = {
        doc["name"]: sorted({int(m) for c in doc["claims"] for a in c["definition"]["arms"]
                             for m in re.findall(r"num_features = (\d+)", a["query"])})
        for doc in (cpu, paper)
    }  # fmt: skip
    assert easy_hard == {"findings-004-smoe": [1, 2], "findings-004-smoe-paper-scale": [2, 6]}
    assert cpu["spec"]["target"]["train_k"] == paper["spec"]["target"]["train_k"] == [1, 2, 4, 8]
    assert cpu["sweep"]["seeds"] == paper["sweep"]["seeds"]
