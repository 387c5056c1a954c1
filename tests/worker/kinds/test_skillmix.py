"""The skillmix kind: 422 paths of bad specs, a tiny student graded by the rule-based grader, the cache
serving a repeated run, an MoE student whose experts per token reach every router (the renormalise flag
recorded), ept above E failing with the field named, and an endpoint grader whose key comes from the
environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tests.skillmix_grader import Script, serve
from tests.tiny_moe import cpu_budget_for_one_layer, tiny_moe
from tests.worker.kinds.sraven_context import MemoryContext
from tests.worker.stores import Stores
from worker.core.models import load_model
from worker.kinds.skillmix.skillmix import run
from worker.specs import manifest
from worker.specs.placement import accelerate_max_memory
from worker.specs.skillmix.skillmix import SkillmixCell, SkillmixSpec
from worker.tracking.context import RunError

# the endpoints below are fake servers on 127.0.0.1: the admin's opt-in (loopback_endpoints) lets them be named
pytestmark = pytest.mark.usefixtures("one_thread", "loopback_endpoints")
MIXTRAL = "mistralai/Mixtral-8x7B-Instruct-v0.1"
TINY = {"combinations": 2, "generations": 2, "gradings": 3, "generation": {"max_new_tokens": 6}}


def error_locs(spec: dict[str, Any]) -> list[tuple[Any, ...]]:
    with pytest.raises(ValidationError) as info:
        SkillmixSpec.model_validate(spec)
    return [tuple(e["loc"]) for e in info.value.errors()]


ENDPOINT = {"url": "http://127.0.0.1:1/v1", "model": "g", "api_key_secret": "GRADER_KEY"}
GPUS = {"device": "cuda", "gpus": 2}


@pytest.mark.parametrize(
    ("spec", "loc"),
    [
        ({"ept": 0}, ("ept",)),
        ({"k": 0}, ("k",)),
        ({"k": 13}, ("k",)),  # the built-in list has 12 skills
        ({"student": {"name": MIXTRAL}, "ept": 9}, ("ept",)),  # Mixtral has 8 experts
        ({"ept": 2}, ("ept",)),  # smollm2-135m is dense
        ({"student": {"endpoint": ENDPOINT}, "ept": 2}, ("ept",)),
        ({"grader": {"type": "endpoint", "endpoint": {**ENDPOINT, "api_key_env": "OPENAI_API_KEY"}}}, ("grader", "endpoint", "api_key_env")),
        ({"grader": {"type": "endpoint", "endpoint": {**ENDPOINT, "api_key_secret": "sk-abc-123"}}}, ("grader", "endpoint", "api_key_secret")),
        ({"grader": {"type": "endpoint"}}, ("grader", "endpoint")),
        ({"grader": {"endpoint": ENDPOINT}}, ("grader", "endpoint")),
        ({"generations": 0}, ("generations",)),
        ({"student": {"device_map": "everywhere"}}, ("student", "device_map")),
        ({"student": {"max_memory": {"cpu": "8GiB"}}}, ("student", "max_memory")),  # no device_map
        ({"student": {"device_map": "auto", "max_memory": {"gpu0": "70GiB"}}, "resources": GPUS}, ("student", "max_memory", "gpu0", "[key]")),
        ({"student": {"device_map": "auto", "max_memory": {"0": "70 gigs"}}, "resources": GPUS}, ("student", "max_memory", "0")),
        ({"student": {"device_map": "auto", "max_memory": {"0": "0GiB"}}, "resources": GPUS}, ("student", "max_memory", "0")),
        ({"student": {"device_map": "auto", "max_memory": {"cuda:2": "70GiB"}}, "resources": GPUS}, ("student", "max_memory", "cuda:2")),
        ({"student": {"device_map": "auto", "max_memory": {"0": "1GiB", "cuda:0": "2GiB"}}, "resources": GPUS}, ("student", "max_memory")),
        ({"student": {"device_map": "auto", "max_memory": {"0": "70GiB"}}}, ("student", "max_memory", "0")),  # gpus 0
        ({"grader": {"type": "local", "device_map": "auto", "max_memory": {"disk": "1 TB", "cpu": "-1GB"}}}, ("grader", "max_memory", "cpu")),
    ],
)  # fmt: skip
def test_bad_specs_name_the_field(spec: dict[str, Any], loc: tuple[str, ...]) -> None:
    assert error_locs(spec) == [loc]


def test_an_endpoint_student_refuses_ept_and_says_why() -> None:
    with pytest.raises(ValidationError) as info:
        SkillmixSpec.model_validate({"student": {"endpoint": ENDPOINT}, "ept": 2})
    (error,) = info.value.errors()
    assert error["loc"] == ("ept",)
    assert "endpoint serves a fixed model" in error["msg"] and "leave ept null" in error["msg"]
    assert SkillmixSpec.model_validate({"student": {"endpoint": ENDPOINT}}).ept is None


def test_placements_that_fit_the_resources_are_accepted() -> None:
    spec = SkillmixSpec.model_validate(
        {
            "student": {
                "name": MIXTRAL,
                "dtype": "bfloat16",
                "device_map": "auto",
                "max_memory": {"0": "70GiB", "cuda:1": "70.5 GiB", "cpu": "100GB", "disk": "1TiB"},
            },
            "grader": {"type": "local", "model": MIXTRAL, "dtype": "bfloat16", "device_map": "sequential"},
            "resources": GPUS,
        }
    )
    assert spec.student.max_memory == {"0": "70GiB", "cuda:1": "70.5 GiB", "cpu": "100GB", "disk": "1TiB"}
    assert accelerate_max_memory(spec.student.max_memory) == {
        0: 70 * 2**30, 1: int(70.5 * 2**30), "cpu": 100 * 10**9, "disk": 2**40
    }  # fmt: skip
    assert (spec.grader.device_map, spec.grader.max_memory, spec.grader.dtype) == (
        "sequential",
        None,
        "bfloat16",
    )
    assert SkillmixSpec.model_validate({}).student.device_map is None


def test_empty_spec_is_the_cpu_demo_and_every_example_is_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REASONLAB_OUTBOUND_ALLOW", "api.openai.com")  # the paper examples' grader (GPT-4)
    spec = SkillmixSpec.model_validate({})
    assert (spec.student.name, spec.ept, spec.k, spec.grader.type) == ("smollm2-135m", None, 2, "rules")
    assert (spec.generations, spec.gradings, spec.generation.temperature) == (3, 3, 0.7)
    assert SkillmixSpec.model_validate({"student": {"name": MIXTRAL}, "ept": 8}).ept == 8
    for example in manifest("skillmix").examples:
        SkillmixSpec.model_validate(dict(example.spec))


def cell_of(ctx: MemoryContext) -> SkillmixCell:
    (record,) = ctx.results
    return SkillmixCell.model_validate(record.model_dump())


def test_tiny_student_graded_by_rules_then_served_from_the_cache(tmp_path: Path, stores: Stores) -> None:
    spec = SkillmixSpec.model_validate({"student": {"name": "tiny-llama"}, **TINY, "cache": {"dir": "mine"}})
    ctx = MemoryContext(out_dir=tmp_path)
    run(spec, ctx)
    cell = cell_of(ctx)
    assert (cell.model, cell.student, cell.grader, cell.k, cell.ept, cell.renormalises) == (
        "tiny-llama", "hf", "rules", 2, None, None
    )  # fmt: skip
    assert cell.total_gradings == 2 * 2 * 3 and cell.failed_gradings == 0
    asked = 2 * 2 * 2 + 2 * 2 * 3  # two turns per text, three gradings per text
    assert (cell.cached_replies, cell.new_replies) == (0, asked)
    assert len(cell.samples) == 2 and all(len(s.points[0]) == 5 for s in cell.samples)
    assert 0.0 <= cell.skill_fraction.mean <= 1.0 and cell.total_score.stderr is not None
    # a point per combination graded (the run page's charts draw lines): running means, replies so far
    headline = ("full_marks", "all_skills", "skill_fraction")
    for key in (*headline, "rescaled_score", "failed_gradings", "cached_replies", "new_replies"):
        assert set(ctx.metrics[key]) == {1, 2}, key
    first, both = cell.samples[0].best, cell.samples
    for m in headline:
        assert ctx.metrics[m][1] == pytest.approx(first[m])
        assert ctx.metrics[m][2] == pytest.approx((both[0].best[m] + both[1].best[m]) / 2)
        assert ctx.metrics[m][2] == pytest.approx(getattr(cell, m).mean)
    assert 2 * 2 * 2 < ctx.metrics["new_replies"][1] <= ctx.metrics["new_replies"][2] == asked
    assert ctx.metrics["cached_replies"] == {1: 0.0, 2: 0.0}
    # the per-example table: a row per (combination, generation), its gradings' replies and points by criterion
    rows = ctx.examples["gradings"]
    assert [r["key"] for r in rows] == [f"combination-{c}/generation-{g}" for c in (0, 1) for g in (0, 1)]
    for row in rows:
        sample = cell.samples[row["combination"]]
        assert row["skills"] == sample.skills and row["topic"] == sample.topic
        assert row["reply"] == sample.texts[row["generation"]] and len(row["replies"]) == 2
        assert row["points"] == sample.points[row["generation"]]
        assert len(row["gradings"]) == 3
        for grading in row["gradings"]:
            assert isinstance(grading["reply"], str) and grading["reply"]
            labels = list(grading["points"])
            assert labels[:2] == [f"Illustrates {name}" for name in sample.skills]
            assert (
                labels[2:] == [f"Pertains to {sample.topic}", "Makes sense", labels[4]] and len(labels) == 5
            )
            assert set(grading["points"].values()) <= {0, 1}

    again = MemoryContext(out_dir=tmp_path)
    run(spec, again)
    repeat = cell_of(again)
    assert (repeat.cached_replies, repeat.new_replies) == (asked, 0)
    assert repeat.samples == cell.samples and repeat.full_marks == cell.full_marks
    assert again.metrics["cached_replies"] == {1: asked, 2: asked}
    assert again.examples == ctx.examples  # the cached replies give the same rows
    assert again.metrics["full_marks"] == pytest.approx(ctx.metrics["full_marks"])
    assert any((stores.cache / "skillmix" / "mine").iterdir())  # the named cache, under the cache root


@pytest.mark.parametrize(("model_type", "renormalises"), [("mixtral", True), ("qwen2_moe", False)])
@pytest.mark.heavy
def test_moe_student_gets_ept_on_every_router_and_above_e_fails_naming_the_field(
    tmp_path: Path, stores: Stores, model_type: str, renormalises: bool
) -> None:
    tiny_moe(stores.models / "tiny" / model_type, model_type)
    name = f"tiny/{model_type}"  # a folder of the model store, named relative to it
    spec = {"student": {"name": name}, **TINY, "combinations": 1, "cache": {"enabled": False}}
    ctx = MemoryContext(out_dir=tmp_path)
    run(SkillmixSpec.model_validate({**spec, "ept": 3}), ctx)
    cell = cell_of(ctx)
    assert (cell.ept, cell.default_ept, cell.num_experts, cell.routers, cell.renormalises) == (
        3, 2, 4, 2, renormalises
    )  # fmt: skip
    assert ctx.params["derived"]["ept"] == 3
    default = MemoryContext(out_dir=tmp_path)
    run(SkillmixSpec.model_validate(spec), default)
    assert (cell_of(default).ept, cell_of(default).default_ept) == (2, 2)
    with pytest.raises(RunError, match=r"^ept: 5 cannot be set .*1\.\.4"):
        run(SkillmixSpec.model_validate({**spec, "ept": 5}), MemoryContext(out_dir=tmp_path))


@pytest.mark.heavy
def test_a_student_split_over_cpu_and_disk_writes_what_the_single_device_student_writes(
    tmp_path: Path, stores: Stores
) -> None:
    """device_map auto with a CPU budget that sends layer 1 to the disk: same texts and points as the
    student on one device, ept 3 set on both routers (the offloaded one too)."""
    tiny_moe(stores.models / "mixtral", "mixtral")  # the offload folder goes under the cache root too
    name = "mixtral"
    budget = cpu_budget_for_one_layer(load_model(name).model)
    spec = {"student": {"name": name}, **TINY, "combinations": 1, "ept": 3, "cache": {"enabled": False}}
    single = MemoryContext(out_dir=tmp_path)
    run(SkillmixSpec.model_validate(spec), single)
    placement = {"device_map": "auto", "max_memory": {"cpu": f"{budget}B"}}
    placed = MemoryContext(out_dir=tmp_path)
    run(SkillmixSpec.model_validate({**spec, "student": {"name": name, **placement}}), placed)

    one, split = cell_of(single), cell_of(placed)
    assert split.samples == one.samples and all(t for s in split.samples for t in s.texts)
    assert (split.ept, split.default_ept, split.routers, split.renormalises) == (3, 2, 2, True)
    assert set(placed.params["derived"]["student_devices"]) == {"cpu", "disk"}
    assert "student_devices" not in single.params["derived"]
    assert any(line.startswith("student spread by its device_map over cpu") for line in placed.lines)


def test_a_preset_student_with_a_device_map_fails_naming_the_field(tmp_path: Path) -> None:
    spec = SkillmixSpec.model_validate({"student": {"name": "tiny-llama", "device_map": "auto"}, **TINY})
    with pytest.raises(RunError, match=r"^student\.device_map: tiny-llama is a tiny preset"):
        run(spec, MemoryContext(out_dir=tmp_path))


@pytest.mark.heavy
def test_endpoint_grader_gets_its_key_from_the_project_secret_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-kind-test-key-42"
    script = Script(key=key, garbage_first=1, table_style="bare")
    with serve(script) as url:
        spec = SkillmixSpec.model_validate(
            {
                "student": {"name": "tiny-llama"},
                **TINY,
                "grader": {
                    "type": "endpoint",
                    "endpoint": {"url": url, "model": "g", "api_key_secret": "SKM_KEY"},
                },
                "cache": {"enabled": False},
            }
        )
        monkeypatch.setenv("SKM_KEY", key)  # a worker's environment variable is no key source any more
        with pytest.raises(RunError, match=r"grader\.endpoint\.api_key_secret: secret 'SKM_KEY'"):
            run(spec, MemoryContext(out_dir=tmp_path))
        ctx = MemoryContext(out_dir=tmp_path, secrets={"SKM_KEY": key})
        run(spec, ctx)
    cell = cell_of(ctx)
    assert cell.grader == "endpoint:g" and cell.failed_gradings == 0 and cell.total_gradings == 12
    # each distinct prompt's first answer was garbage and was asked again
    assert sum(script.seen.values()) == 12 + len(script.seen)
    assert key not in repr(ctx.params) + repr(ctx.results) + "\n".join(ctx.lines)


@pytest.mark.heavy
def test_a_local_grader_answering_garbage_gives_failed_gradings_not_a_crash(tmp_path: Path) -> None:
    spec = SkillmixSpec.model_validate(
        {
            "student": {"name": "tiny-llama"},
            **TINY,
            "combinations": 1,
            "gradings": 1,
            "grader": {"type": "local", "model": "tiny-llama", "max_new_tokens": 16, "attempts": 2},
            "cache": {"enabled": False},
        }
    )
    ctx = MemoryContext(out_dir=tmp_path)
    run(spec, ctx)  # a random tiny model writes no rubric table
    cell = cell_of(ctx)
    assert cell.grader == "local:tiny-llama"
    assert cell.failed_gradings == cell.total_gradings == 2
    assert cell.total_skill_score.mean == 0.0  # failed gradings vote zeros
    assert sum("failed grading: unparseable reply (after 2 attempt(s))" in line for line in ctx.lines) == 2


def test_a_grader_leaving_out_a_criterion_gives_partial_gradings_and_no_shifted_point(tmp_path: Path) -> None:
    """The grader answers every table without the topic's row and with an 'Overall' row at the end: the
    topic scores 0 in every grading (never the neighbouring row's point), each grading is partial, and the
    record counts them per text and per cell."""
    script = Script(key="k-partial", table_style="overall_no_topic")
    with serve(script) as url:
        spec = SkillmixSpec.model_validate(
            {
                "student": {"name": "tiny-llama"},
                **TINY,
                "grader": {"type": "endpoint", "endpoint": {"url": url, "model": "g", "api_key_secret": "K"}},
                "cache": {"enabled": False},
            }
        )
        ctx = MemoryContext(out_dir=tmp_path, secrets={"K": "k-partial"})
        run(spec, ctx)
    cell = cell_of(ctx)
    assert (cell.partial_gradings, cell.failed_gradings, cell.total_gradings) == (12, 0, 12)
    assert all(s.partial_gradings == [3, 3] for s in cell.samples)
    assert all(points[2] == 0 for s in cell.samples for points in s.points)  # the topic: no row, no point
    assert ctx.metrics["partial_gradings"][2] == 12.0


def test_a_hand_built_endpoint_grader_without_its_endpoint_fails_naming_the_field(tmp_path: Path) -> None:
    spec = SkillmixSpec.model_validate({"student": {"name": "tiny-llama"}, **TINY})
    bad = spec.model_copy(
        update={"grader": spec.grader.model_copy(update={"type": "endpoint", "endpoint": None})}
    )
    ctx = MemoryContext(out_dir=tmp_path)
    with pytest.raises(RunError, match=r"^grader\.endpoint: a grader of type endpoint needs one$"):
        run(bad, ctx)
    assert ctx.results == [] and ctx.metrics == {}
