"""The ReasonFormer paper's findings experiments (examples/findings/reasonformer.yaml and
reasonformer_paper_scale.yaml): each file's experiment is a submission of its kind whose every run
validates, with at least 5 seeds; each claim validates with the backend's claim schema and the query checks
it gets at creation, on SQLite's and Postgres's compilers; each arm's query names the experiment and, once
the experiment is submitted, selects the runs of five seeds, disjoint from the claim's other arms; every
claim's metric is a key the kind logs for the runs its arms select (the kind run on a shrunk copy of each
arm's spec); the paper-scale claims are the CPU file's on runs of their own; and a bad in-run pre-training
(``init.pretrain``, what lets one experiment hold the pre-trained and the fresh arms) is a 422 naming the
field, under the sweep combination when swept."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from backend.experiments import sweep as sweeps
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

CPU, PAPER = "reasonformer.yaml", "reasonformer_paper_scale.yaml"
FILES = [CPU, PAPER]
EXPERIMENT_KEYS = {"name", "kind", "description", "spec", "sweep"}
ARMS = 5  # Shared, Private, Single, Single w/o routing loss (pre-trained in the run), Shared w/o pre-train
PAPER_SKILLS = ["logic", "qa", "ner", "nli", "fact", "general"]


@pytest.mark.parametrize("name", FILES)
def test_the_experiment_is_a_valid_submission_of_its_kind_with_five_seeds(name: str, api: Api) -> None:
    doc = load(name)
    assert set(doc) == EXPERIMENT_KEYS | {"claims"}, set(doc) ^ (EXPERIMENT_KEYS | {"claims"})
    assert doc["kind"] == "reasonformer_finetune"
    seeds = doc["sweep"]["seeds"]
    assert len(seeds) >= 5 and len(set(seeds)) == len(seeds)
    assert list(doc["sweep"]["grid"]) == ["init"] and len(doc["sweep"]["grid"]["init"]) == ARMS
    runs = resolve(ExperimentCreate.model_validate(experiment_body(doc)), api.settings)
    assert len(runs) == ARMS * len(seeds)
    assert {r.spec["kind"] for r in runs} == {doc["kind"]}
    assert {r.queue for r in runs} == {"gpu" if name == PAPER else "cpu"}
    pretrained = [r.spec["init"]["pretrain"] for r in runs if r.spec["init"]["pretrain"] is not None]
    assert len(pretrained) == (ARMS - 1) * len(seeds)
    # in-run pre-training on the data the adaptation reads: the suite (CPU), appendix-A text (paper)
    assert {p["data"]["source"] for p in pretrained} == {"jsonl" if name == PAPER else "synthetic"}


@pytest.mark.parametrize("name", FILES)
def test_each_claim_validates_and_names_its_experiment(name: str) -> None:
    doc = load(name)
    for claim in checked_claims(doc, 4):
        definition = claim.definition
        assert definition.family and definition.section.startswith("001 ")
        assert definition.read.mode == "last"  # the final evaluation: one point per run
        assert definition.direction == "greater" and definition.min_effect > 0


def select(api: Api, q: str) -> list[dict[str, Any]]:
    got = api.client.get("/api/v1/runs", params={"q": q, "project": "default", "limit": 100}, headers=api.h())
    assert got.status_code == 200, got.text
    items: list[dict[str, Any]] = got.json()["items"]
    return items


@pytest.mark.parametrize("name", FILES)
def test_the_arms_select_five_seeds_of_the_submitted_experiment(name: str, api: Api) -> None:
    doc = load(name)
    pid = next(p["id"] for p in api.client.get("/api/v1/projects", headers=api.h()).json())
    res = api.client.post("/api/v1/experiments", json=experiment_body(doc), headers=api.h())
    assert res.status_code == 201, res.text
    # a second experiment of the same kind the queries must not reach
    other = {**experiment_body(doc), "name": doc["name"] + "-other"}
    assert api.client.post("/api/v1/experiments", json=other, headers=api.h()).status_code == 201
    arms_of_runs: dict[str, set[int]] = {}
    for raw in doc["claims"]:
        created = api.client.post(f"/api/v1/projects/{pid}/claims", json=raw, headers=api.h())
        assert created.status_code == 201, created.text
        assert [a["n"] for a in created.json()["evaluation"]["arms"]] == [0, 0]  # none ran
        seen: set[int] = set()
        for arm in raw["definition"]["arms"]:
            items = select(api, arm["query"])
            assert sorted(r["params"]["seed"] for r in items) == [1, 2, 3, 4, 5], (raw["name"], arm["name"])
            ids = {r["id"] for r in items}
            assert not ids & seen, f"{raw['name']}: arm {arm['name']} shares runs with another arm"
            seen |= ids
            assert arms_of_runs.setdefault(arm["name"], ids) == ids  # an arm's name means one set of runs
    assert len(arms_of_runs) == ARMS  # every arm of the sweep is some claim's


def shrunk(spec: dict[str, Any], paper: bool) -> dict[str, Any]:
    """An arm's spec in seconds: a few steps and instances; the paper's T5 v1.1 base and hub datasets
    replaced by t5-tiny and small jsonl files of the same shape (``down.jsonl``, ``pre.jsonl``)."""
    small = copy.deepcopy(spec)
    tiny_train = {"steps": 2, "batch_size": 4, "log_every": 1, "checkpoint_every": 0, "max_new_tokens": 4}
    small["train"] = tiny_train
    small["resources"] = {"device": "cpu"}
    small.setdefault("analysis", {})["cases_per_task"] = 1
    tiny_model = {"backbone": "t5-tiny", "representation_layers": 2, "module_layers": 1, "router_hidden": 8}
    if paper:
        small["data"] = {
            "source": "jsonl",
            "train_path": "down.jsonl",
            "eval_path": "down.jsonl",
            "tokenizer": "tok",
        }
    else:
        small["data"].update(train_per_task=2, eval_per_task=2)
    pre = small["init"]["pretrain"]
    if pre is None:
        small["model"].update(
            tiny_model, adapter_bottleneck=8 if small["model"]["variant"] == "shared" else None
        )
        return small
    pre["train"] = tiny_train
    pre["model"].update(tiny_model, adapter_bottleneck=8 if pre["model"]["variant"] == "shared" else None)
    if paper:
        pre["data"] = {"source": "jsonl", "path": "pre.jsonl", "tokenizer": "tok", "eval_fraction": 0.5}
    else:
        pre["data"]["eval_per_task"] = 1
    return small


@pytest.fixture
def text_stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A worker cache root of the test's own with the paper-scale data's stand-ins: pre-training rows of
    every paper skill (appendix A's shape), a downstream file, and a symbol tokenizer for both."""
    from worker.core.reasonformer.data.tokenizer import SymbolTokenizer

    cache = tmp_path / "reasonlab-cache"
    (cache / "data").mkdir(parents=True)
    (cache / "models").mkdir()
    SymbolTokenizer(list("abcdefgh")).save(cache / "models" / "tok")
    rows = [
        f'{{"skill": "{skill}", "input": "{x} {y}", "output": "{y}"}}'
        for skill in PAPER_SKILLS
        for x, y in (("a", "e"), ("b", "f"), ("c", "g"), ("d", "h"))
    ]
    (cache / "data" / "pre.jsonl").write_text("\n".join(rows) + "\n")
    (cache / "data" / "down.jsonl").write_text('{"input": "a b", "output": "b"}\n' * 4)
    monkeypatch.setenv("REASONLAB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


@pytest.mark.usefixtures("one_thread", "text_stores")
@pytest.mark.parametrize("name", FILES)
@pytest.mark.heavy
def test_every_claim_reads_a_metric_the_kind_logs_for_its_arms(name: str, api: Api, tmp_path: Path) -> None:
    from worker.kinds import get_kind
    from worker.specs.reasonformer.reasonformer_finetune import ReasonFormerFinetuneSpec

    doc = load(name)
    res = api.client.post("/api/v1/experiments", json=experiment_body(doc), headers=api.h())
    assert res.status_code == 201, res.text
    logged: dict[str, set[str]] = {}  # an arm's sweep params (seed 1) -> the metric keys its run logs
    for claim in doc["claims"]:
        metric = claim["definition"]["metric"]
        for arm in claim["definition"]["arms"]:
            (run,) = [r for r in select(api, arm["query"]) if r["params"]["seed"] == 1]
            key = yaml.safe_dump(run["params"], sort_keys=True)
            if key not in logged:
                spec = ReasonFormerFinetuneSpec.model_validate(sweeps.apply(doc["spec"], run["params"]))
                small = ReasonFormerFinetuneSpec.model_validate(
                    shrunk(spec.model_dump(mode="json"), name == PAPER)
                )
                ctx = MemoryContext(seed=1, out_dir=tmp_path / str(len(logged)))
                get_kind("reasonformer_finetune").run(small, ctx)
                logged[key] = set(ctx.metrics)
            assert metric in logged[key], f"{claim['name']}, arm {arm['name']}: the kind logs no {metric!r}"
    assert len(logged) == ARMS


def test_the_paper_scale_claims_are_the_cpu_claims_on_their_own_runs() -> None:
    cpu, paper = load(CPU), load(PAPER)
    assert [without_scale(c) for c in paper["claims"]] == [without_scale(c) for c in cpu["claims"]]
    assert all(c["name"].endswith(" (paper scale)") for c in paper["claims"])
    assert cpu["sweep"]["seeds"] == paper["sweep"]["seeds"]
    # the same arms: the variants and routing-loss weights pre-trained, and one arm without pre-training
    arms = {
        doc["name"]: [
            (i["pretrain"]["model"]["variant"], i["pretrain"]["model"]["routing_loss_weight"]) if i else None
            for i in doc["sweep"]["grid"]["init"]
        ]
        for doc in (cpu, paper)
    }
    assert arms["findings-001-reasonformer"] == arms["findings-001-reasonformer-paper-scale"]
    assert cpu["spec"]["model"]["variant"] == paper["spec"]["model"]["variant"] == "shared"


def test_a_bad_in_run_pretraining_is_a_422_naming_the_field(api: Api) -> None:
    kind = "reasonformer_finetune"
    r = api.submit({"init": {"pretrain": {}}, "data": {"source": "hub"}}, kind=kind)
    assert r.status_code == 422, r.text
    assert [(e["loc"], e["type"]) for e in r.json()["errors"]] == [
        (["body", "spec", "data", "source"], "pretrain_data_mismatch")
    ]
    r = api.submit({"init": {"run_id": 1, "pretrain": {}}}, kind=kind)
    assert r.status_code == 422 and [e["loc"] for e in r.json()["errors"]] == [
        ["body", "spec", "init", "pretrain"]
    ]
    sweep = {
        "grid": {
            "init": [{"pretrain": {}}, {"pretrain": {"model": {"skills": ["reverse", "juggle", "general"]}}}]
        }
    }
    r = api.submit({}, sweep, kind=kind)
    assert r.status_code == 422, r.text
    # (the field path's parts as text, as every spec error's: backend/experiments/service.py)
    assert [e["loc"] for e in r.json()["errors"]] == [
        ["body", "sweep", 1, "init", "pretrain", "model", "skills", "1"]
    ]
    sweep = {"grid": {"init.pretrain.train.steps": [10, 0]}}
    r = api.submit({}, sweep, kind=kind)
    assert r.status_code == 422, r.text
    assert [e["loc"] for e in r.json()["errors"]] == [
        ["body", "sweep", 1, "init", "pretrain", "train", "steps"]
    ]
    assert api.submit({"init": {"pretrain": {"train": {"steps": 10}}}}, kind=kind).status_code == 201
