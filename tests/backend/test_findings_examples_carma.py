"""The CARMA findings experiments (examples/findings/carma.yaml, carma_paper_scale.yaml): each
submits as a carma experiment of at least 5 seeds per arm, each claim is created by the API (its schema,
its arms' queries and its metric checked as for any claim), each arm's query selects exactly its arm's
runs of that experiment, each claim's metric is a key the kind logs for that spec, and the paper-scale
file carries the same claims."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from backend.claims.schemas import ClaimCreate
from tests.backend.conftest import Api
from worker.core.cap import region_of
from worker.kinds.carma.common.layers import cap_layers
from worker.kinds.carma.common.synonyms import rate_key
from worker.specs.carma.carma import KNOWN_DEPTHS, CarmaSpec

FINDINGS = Path(__file__).resolve().parents[2] / "examples" / "findings"
FILES = ["carma.yaml", "carma_paper_scale.yaml"]
ARMS = {"FT": "ft", "CARMA": "carma"}


def load(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((FINDINGS / name).read_text())
    assert isinstance(doc, dict)
    return doc


def logged_keys(spec: CarmaSpec) -> set[str]:
    """The metrics a run of ``spec`` ends with that claims may name: the test's, the CAP regions that
    hold a start layer (and their difference when both ends do), ConsistSyn and its CV per rate."""
    depth = KNOWN_DEPTHS[spec.model.name]
    regions = {region_of(L / (depth - 1)) for L in cap_layers(spec, depth)}
    keys = {"test_acc", "test_loss", *(f"cap/{r}_acc" for r in regions)}
    if {"early", "late"} <= regions:
        keys.add("cap/early_minus_late_acc")
    for rate in spec.synonyms.rates:
        keys |= {f"consist_syn/{rate_key(rate)}", f"consist_syn_cv/{rate_key(rate)}"}
    return keys


def runs_of(api: Api, query: str) -> list[dict[str, Any]]:
    res = api.client.get(
        "/api/v1/runs", params={"q": query, "project": "default", "limit": 100}, headers=api.h()
    )
    assert res.status_code == 200, (query, res.text)
    return list(res.json()["items"])


@pytest.mark.parametrize("name", FILES)
def test_a_findings_file_submits_and_its_claims_are_created(api: Api, name: str) -> None:
    doc = load(name)
    assert set(doc) == {"name", "kind", "description", "spec", "sweep", "claims"}
    assert doc["kind"] == "carma" and doc["sweep"]["grid"] == {"variant": ["ft", "carma"]}
    assert len(doc["sweep"]["seeds"]) >= 5  # the findings ask for at least 5 seeds per arm
    body = {k: doc[k] for k in ("name", "kind", "description", "spec", "sweep")}
    res = api.client.post("/api/v1/experiments", json=body, headers=api.h())
    assert res.status_code == 201, res.text
    runs = res.json()["runs"]
    assert len(runs) == 2 * len(doc["sweep"]["seeds"])
    # what each run will log: every claim's metric must be among these keys
    keys = logged_keys(CarmaSpec.model_validate(runs[0]["spec"]))

    pid = next(p["id"] for p in api.client.get("/api/v1/projects", headers=api.h()).json())
    assert len(doc["claims"]) >= 6
    for claim in doc["claims"]:
        ClaimCreate.model_validate(claim)  # the schema alone, before the API's query checks
        definition = claim["definition"]
        assert definition["metric"] in keys, (claim["name"], sorted(keys))
        assert [arm["name"] for arm in definition["arms"]] == list(ARMS)  # FT is the reference
        for arm in definition["arms"]:
            assert f'experiment = "{doc["name"]}"' in arm["query"], arm["query"]
            selected = runs_of(api, arm["query"])
            assert sorted(r["params"]["seed"] for r in selected) == sorted(doc["sweep"]["seeds"])
            assert {r["params"]["variant"] for r in selected} == {ARMS[arm["name"]]}
        created = api.client.post(f"/api/v1/projects/{pid}/claims", json=claim, headers=api.h())
        assert created.status_code == 201, (claim["name"], created.text)
        evaluation = created.json()["evaluation"]  # no run has ended: nothing decided yet
        assert evaluation["verdict"] == "inconclusive" and [a["n"] for a in evaluation["arms"]] == [0, 0]
    # the claims the issue names: ConsistSyn and its CV at two rates, CAP early vs late
    metrics = {c["definition"]["metric"] for c in doc["claims"]}
    assert {"consist_syn/25", "consist_syn/40", "consist_syn_cv/25", "consist_syn_cv/40"} <= metrics
    assert {"cap/early_acc", "cap/early_minus_late_acc"} <= metrics


def test_the_paper_scale_file_carries_the_same_claims() -> None:
    cpu, paper = load("carma.yaml"), load("carma_paper_scale.yaml")
    assert cpu["name"] != paper["name"]
    renamed = copy.deepcopy(cpu["claims"])
    for claim in renamed:
        claim["name"] += " (paper scale)"
        definition = claim["definition"]
        definition["family"] += " (paper scale)"
        for arm in definition["arms"]:
            arm["query"] = arm["query"].replace(f'"{cpu["name"]}"', f'"{paper["name"]}"')
    assert paper["claims"] == renamed
    assert paper["sweep"] == cpu["sweep"]
    # the paper's setting: GPUs, B.3's Llama-3.2-1B weight and stopping layer, CAP at every layer
    spec = CarmaSpec.model_validate(paper["spec"])
    assert spec.resources.gpus == 1 and spec.model.name == "meta-llama/Llama-3.2-1B"
    assert spec.carma.lambda_ == 0.4 and spec.carma.layers == [3, 6] and spec.train.max_steps is None
    assert cap_layers(spec, KNOWN_DEPTHS[spec.model.name]) == list(range(16))


def test_a_claim_naming_a_metric_the_kind_does_not_log_is_caught() -> None:
    """The key check above can fail: a rate the spec does not run, or a CAP region without a start layer."""
    spec = CarmaSpec.model_validate({**load("carma.yaml")["spec"], "cap": {"layers": [0, 29]}})
    keys = logged_keys(spec)
    assert "consist_syn/25" in keys and "consist_syn/33" not in keys
    assert "cap/early_minus_late_acc" in keys and "cap/middle_acc" not in keys
