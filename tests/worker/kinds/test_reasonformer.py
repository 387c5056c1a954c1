"""The reasonformer_pretrain and reasonformer_finetune kinds: specs (422 field paths), tiny runs through
run(spec, ctx) with their result records, fine-tuning from a pre-training run's saved model, exact resume."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import torch
from pydantic import ValidationError

from tests.worker.kinds.sraven_context import MemoryContext
from tests.worker.stores import Stores
from worker.core.reasonformer.data.synthetic import SkillSuite
from worker.core.reasonformer.data.tokenizer import SymbolTokenizer
from worker.kinds import get_kind
from worker.specs import manifest, result_class, spec_class
from worker.specs.reasonformer.common.results import ReasonFormerEval, Routing
from worker.specs.reasonformer.reasonformer_finetune import ReasonFormerFinetuneSpec
from worker.specs.reasonformer.reasonformer_pretrain import ReasonFormerPretrainSpec
from worker.tracking.context import RunError

pytestmark = pytest.mark.usefixtures("one_thread")

TINY_TRAIN = {"steps": 6, "batch_size": 8, "log_every": 1, "checkpoint_every": 3, "max_new_tokens": 6}


class SourceContext(MemoryContext):
    """A context that sees other runs' outputs, as the platform's does (shared artifact root)."""

    def __init__(self, runs: dict[int, Path], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.runs = runs

    def run_outputs(self, run_id: int) -> Path | None:
        return self.runs.get(run_id)


def locs(cls: type, spec: dict[str, Any]) -> list[tuple[Any, ...]]:
    with pytest.raises(ValidationError) as info:
        cls.model_validate(spec)  # type: ignore[attr-defined]
    return [tuple(e["loc"]) for e in info.value.errors()]


def pretrain_spec(**model: Any) -> ReasonFormerPretrainSpec:
    return ReasonFormerPretrainSpec.model_validate(
        {"model": model, "data": {"eval_per_task": 1}, "train": TINY_TRAIN, "analysis": {"cases_per_task": 1}}
    )


def test_empty_specs_are_cpu_demos_and_registered() -> None:
    pre, fine = ReasonFormerPretrainSpec.model_validate({}), ReasonFormerFinetuneSpec.model_validate({})
    assert (pre.model.variant, pre.model.backbone, pre.model.resolved_depth(), pre.model.top_k) == (
        "shared",
        "t5-tiny",
        3,
        2,
    )
    assert pre.data.source == fine.data.source == "synthetic" and fine.init.run_id is None
    assert spec_class("reasonformer_pretrain") is ReasonFormerPretrainSpec
    assert result_class("reasonformer_eval") is ReasonFormerEval and result_class("routing") is Routing
    assert manifest("reasonformer_finetune").source_runs == {"init.run_id": "reasonformer_pretrain"}
    for name in ("reasonformer_pretrain", "reasonformer_finetune"):
        for example in manifest(name).examples:
            spec_class(name).model_validate(dict(example.spec))


def test_bad_specs_name_the_field() -> None:
    P, F = ReasonFormerPretrainSpec, ReasonFormerFinetuneSpec
    assert locs(P, {"model": {"top_k": 7}}) == [("model", "top_k")]  # 6 skills
    assert locs(P, {"model": {"skills": ["reverse", "sort", "general"], "top_k": 4}}) == [("model", "top_k")]
    assert locs(P, {"model": {"depth": 0}}) == [("model", "depth")]
    assert locs(P, {"model": {"variant": "single", "depth": 3}}) == [("model", "depth")]
    skills = ["reverse", "sort", "shift", "lookup", "rotate", "general", "juggle"]
    assert locs(P, {"model": {"skills": skills}}) == [("model", "skills", 6)]  # unknown skill
    assert locs(P, {"model": {"variant": "morm", "routing_loss_weight": 1.0}}) == [
        ("model", "routing_loss_weight")
    ]
    assert locs(P, {"data": {"source": "jsonl"}}) == [("data", "path")]
    # the default model (a preset) is checked against the data too: text needs a tokenizer
    assert locs(P, {"data": {"source": "jsonl", "path": "p.jsonl"}}) == [("model",)]
    assert locs(F, {"data": {"source": "hub"}}) == [("model",)]
    assert locs(F, {"data": {"tasks": ["compose9"]}}) == [("data", "tasks")]
    assert locs(F, {"data": {"few_shot": {"count": 4, "fraction": 0.5}}}) == [
        ("data", "few_shot", "fraction")
    ]
    assert locs(F, {"data": {"source": "jsonl"}}) == [("data", "eval_path")]
    assert locs(F, {"init": {"run_id": 0}}) == [("init", "run_id")]
    assert locs(F, {"model": {"variant": "t5"}, "freeze": "reasoning"}) == [("freeze",)]


def test_bad_in_run_pretraining_names_the_field() -> None:
    F = ReasonFormerFinetuneSpec
    assert locs(F, {"init": {"run_id": 3, "pretrain": {}}}) == [("init", "pretrain")]
    assert locs(F, {"init": {"path": "m", "pretrain": {}}}) == [("init", "pretrain")]
    skills = ["reverse", "juggle", "general"]
    assert locs(F, {"init": {"pretrain": {"model": {"skills": skills}}}}) == [
        ("init", "pretrain", "model", "skills", 1)
    ]
    assert locs(F, {"init": {"pretrain": {"train": {"steps": 0}}}}) == [
        ("init", "pretrain", "train", "steps")
    ]
    # the synthetic suite's pre-training adapts on the same suite; jsonl text on text
    assert locs(F, {"init": {"pretrain": {}}, "data": {"source": "hub"}}) == [("data", "source")]
    jsonl = {"source": "jsonl", "path": "p.jsonl", "tokenizer": "tok"}
    assert locs(F, {"init": {"pretrain": {"data": jsonl}}}) == [("data", "source")]
    other_suite = {"init": {"pretrain": {"data": {"suite": {"split_seed": 1}}}}}
    assert locs(F, other_suite) == [("data", "suite")]
    assert F.model_validate({**other_suite, "data": {"suite": {"split_seed": 1}}}).init.pretrain is not None
    # a preset backbone on text needs its tokenizer; plain T5 pre-trained here has nothing to freeze
    assert locs(
        F, {"init": {"pretrain": {"data": {**jsonl, "tokenizer": None}}}, "data": {"source": "hub"}}
    ) == [("init", "pretrain", "model")]
    assert locs(F, {"init": {"pretrain": {"model": {"variant": "t5"}}}, "freeze": "both"}) == [("freeze",)]


@pytest.mark.heavy
def test_pretrain_then_finetune_from_its_saved_model(tmp_path: Path) -> None:
    pre = MemoryContext(out_dir=tmp_path / "run-1")
    get_kind("reasonformer_pretrain").run(pretrain_spec(), pre)
    evaluation, routing = pre.results
    assert isinstance(evaluation, ReasonFormerEval) and isinstance(routing, Routing)
    assert evaluation.stage == "pretrain" and evaluation.label == "Shared (S)" and evaluation.modularity
    assert {t.task for t in evaluation.tasks} >= {"sort", "reverse", "sort>reverse"}
    assert evaluation.parameters.activated < evaluation.parameters.total
    assert routing.skills[-1] == "general" and routing.chance == pytest.approx(0.2)
    assert routing.skill_match is not None and routing.order_match_heldout is not None
    # the instances each rate is a proportion of (the dashboard's Wilson interval): the tasks it covers
    primitives = {"reverse", "sort", "shift", "lookup", "rotate"}
    assert routing.skill_match_n == sum(
        t.count for t in routing.tasks if t.task in primitives and t.match is not None
    )
    assert routing.order_match_heldout_n is not None and routing.order_match_heldout_n > 0
    sort = next(t for t in routing.tasks if t.task == "sort")
    assert sort.expected == ["sort"] * 3 and len(sort.weights) == 3 and len(sort.cases[0].steps) == 3
    assert all(sum(row) == pytest.approx(1.0, abs=1e-5) for row in sort.weights)
    assert {"loss", "lm_loss", "routing_loss", "router/s0/sort", "stop_gate/s2", "eval/average"} <= set(
        pre.metrics
    )
    assert (tmp_path / "run-1" / "model" / "config.json").is_file()
    # the per-example table: an instance a row, its prediction, gold, and the skills routed per step
    rows = pre.examples["predictions"]
    assert len(rows) == sum(t.count for t in evaluation.tasks) and len({r["key"] for r in rows}) == len(rows)
    for row in rows:
        assert row["key"].startswith(f"{row['task']}/") and isinstance(row["prediction"], str)
        assert (
            row["correct"] == (row["prediction"].strip() == row["gold"].strip())
            or row["task"] == "sort>reverse"
        )
        steps = row["routing"]
        assert [s["step"] for s in steps] == [1, 2, 3]
        for step in steps:
            assert len(step["skills"]) == 2 and set(step["skills"]) <= set(routing.skills)
            top = sorted(step["probs"].values(), reverse=True)[:2]
            assert sorted((step["probs"][k] for k in step["skills"]), reverse=True) == top
            assert sum(step["probs"].values()) == pytest.approx(1.0, abs=1e-3)

    spec = ReasonFormerFinetuneSpec.model_validate(
        {
            "init": {"run_id": 1},
            "freeze": "reasoning",
            "data": {"train_per_task": 4, "eval_per_task": 2},
            "train": TINY_TRAIN,
        }
    )
    fine = SourceContext({1: tmp_path / "run-1"}, out_dir=tmp_path / "run-2")
    get_kind("reasonformer_finetune").run(spec, fine)
    evaluation, routing = fine.results
    assert evaluation.stage == "finetune" and evaluation.pretrained and evaluation.source_run_id == 1
    assert evaluation.freeze == "reasoning" and evaluation.parameters.tuned < evaluation.parameters.total
    assert {t.task: t.metric for t in evaluation.tasks} == {
        "choose2": "accuracy",
        "compose2": "exact_match",
        "compose3": "exact_match",
    }
    heldout = {">".join(p) for p in SkillSuite().heldout_programs}
    assert {t.task for t in routing.tasks} <= heldout  # by program, all held out of pre-training
    assert all(t.expected is not None for t in routing.tasks)  # by program: the order is known
    assert "routing_loss" not in fine.metrics  # adaptation: teacher forcing only (section 3.3)


def test_finetune_fresh_baselines_and_few_shot(tmp_path: Path) -> None:
    for variant, label in (("t5", "T5"), ("morm", "MoRM (S)")):
        spec = ReasonFormerFinetuneSpec.model_validate(
            {
                "model": {"variant": variant},
                "data": {
                    "tasks": ["choose2"],
                    "train_per_task": 10,
                    "eval_per_task": 2,
                    "few_shot": {"count": 4},
                },
                "train": TINY_TRAIN,
            }
        )
        ctx = MemoryContext(out_dir=tmp_path / variant)
        get_kind("reasonformer_finetune").run(spec, ctx)
        evaluation = ctx.results[0]
        assert (
            evaluation.label == label
            and not evaluation.pretrained
            and evaluation.few_shot == "4 per task (seed 0)"
        )
        assert len(ctx.results) == (1 if variant == "t5" else 2)  # plain T5 has no routing
        rows = ctx.examples["predictions"]
        assert [r["task"] for r in rows] == ["choose2", "choose2"] and all(r["options"] for r in rows)
        assert all(r["gold"] in r["options"] for r in rows)
        assert all(("routing" in r) == (variant == "morm") for r in rows)


def in_run(model: dict[str, Any], **train: Any) -> ReasonFormerFinetuneSpec:
    """A fine-tuning spec that pre-trains ``model`` in the run first (init.pretrain), tiny."""
    return ReasonFormerFinetuneSpec.model_validate(
        {
            "init": {"pretrain": {"model": model, "data": {"eval_per_task": 1}, "train": TINY_TRAIN}},
            "data": {"train_per_task": 4, "eval_per_task": 2},
            "train": {**TINY_TRAIN, **train},
            "analysis": {"cases_per_task": 1},
        }
    )


@pytest.mark.heavy
def test_in_run_pretraining_then_adaptation(tmp_path: Path) -> None:
    spec = in_run({"variant": "single", "routing_loss_weight": 1})
    ctx = MemoryContext(out_dir=tmp_path / "with")
    get_kind("reasonformer_finetune").run(spec, ctx)
    evaluation, routing = ctx.results  # the fine-tuned model's records only
    assert evaluation.stage == "finetune" and evaluation.label == "Single (S)"
    assert evaluation.pretrained and evaluation.modularity and evaluation.source_run_id is None
    assert routing.stage == "finetune" and routing.depth == 1
    # the pre-training phase: the pre-training kind's metrics under pretrain/, steps 1..6 as its own
    assert set(ctx.metrics["pretrain/routing_loss"]) == set(range(1, 7))
    for key in ("eval/average", "routing/skill_match", "routing/order_match_trained", "router/s0/sort"):
        assert f"pretrain/{key}" in ctx.metrics, key
    assert set(ctx.metrics["pretrain/routing/skill_match"]) == {6}
    assert 0.0 <= ctx.metrics["pretrain/routing/skill_match"][6] <= 1.0
    # then adaptation: teacher forcing only, its evaluation on the held-out compositions
    assert "routing_loss" not in ctx.metrics and set(ctx.metrics["loss"]) == set(range(1, 7))
    assert {"eval/compose2", "eval/average", "routing/order_match_heldout"} <= set(ctx.metrics)
    assert ctx.params["derived"]["source"] == "init.pretrain"
    assert (tmp_path / "with" / "model" / "config.json").is_file()
    # Table 2's "w/o modularity": pre-trained without the skill-routing loss
    ctx = MemoryContext(out_dir=tmp_path / "without")
    get_kind("reasonformer_finetune").run(in_run({"variant": "single", "routing_loss_weight": 0}), ctx)
    assert ctx.results[0].pretrained and not ctx.results[0].modularity
    assert set(ctx.metrics["pretrain/routing_loss"]) == set(range(1, 7))  # logged, weighted 0 in the loss


@pytest.mark.parametrize("stop_after", [3, 9])  # in pre-training (steps 1-6), in adaptation (after it)
@pytest.mark.heavy
def test_an_in_run_pretraining_resumes_where_it_stopped(stop_after: int, tmp_path: Path) -> None:
    spec = in_run({"variant": "shared"}, steps=12)
    kind = get_kind("reasonformer_finetune")
    full = MemoryContext(out_dir=tmp_path / "full")
    kind.run(spec, full)
    ctx = MemoryContext(out_dir=tmp_path / "resumed", stop_after_step=stop_after)
    kind.run(spec, ctx)
    assert ctx.results == [] and ctx.checkpoint is not None
    state = torch.load(io.BytesIO(ctx.checkpoint[0]), weights_only=True)
    # pre-training's checkpoints at its steps, adaptation's after them (6 + its step): the newest is the phase
    assert (set(state), ctx.checkpoint[1]) == (({"pretrain"}, 3) if stop_after == 3 else ({"trainer"}, 6 + 9))
    ctx.stop_after_step = None
    torch.manual_seed(4321)
    kind.run(spec, ctx)
    assert ctx.metrics == full.metrics
    assert [r.model_dump() for r in ctx.results] == [r.model_dump() for r in full.results]


def test_a_source_run_this_context_cannot_see_is_an_error() -> None:
    spec = ReasonFormerFinetuneSpec.model_validate({"init": {"run_id": 5}, "train": TINY_TRAIN})
    with pytest.raises(RuntimeError, match="cannot see run 5"):
        get_kind("reasonformer_finetune").run(spec, MemoryContext())


@pytest.mark.heavy
def test_resume_after_cancel_reproduces_the_uninterrupted_run(tmp_path: Path) -> None:
    spec = pretrain_spec(variant="private", top_k=None)
    kind = get_kind("reasonformer_pretrain")
    full = MemoryContext(out_dir=tmp_path / "full")
    kind.run(spec, full)
    ctx = MemoryContext(out_dir=tmp_path / "resumed", stop_after_step=3)
    torch.manual_seed(1234)
    kind.run(spec, ctx)
    assert ctx.results == [] and ctx.checkpoint is not None and ctx.checkpoint[1] == 3
    ctx.stop_after_step = None
    torch.manual_seed(4321)
    kind.run(spec, ctx)
    assert ctx.metrics == full.metrics
    assert [r.model_dump() for r in ctx.results] == [r.model_dump() for r in full.results]


def hand_built(spec: Any, block: str, **fields: Any) -> Any:
    """``spec`` as code may build one, past validation: fields of its ``block`` replaced."""
    return spec.model_copy(update={block: getattr(spec, block).model_copy(update=fields)})


def test_a_hand_built_jsonl_spec_without_its_files_fails_naming_the_field(stores: Stores) -> None:
    SymbolTokenizer(["a", "b"]).save(stores.models / "tok")
    text = {"source": "jsonl", "tokenizer": "tok"}
    pre = ReasonFormerPretrainSpec.model_validate({"data": {**text, "path": "p.jsonl"}, "train": TINY_TRAIN})
    with pytest.raises(RunError, match=r"^data\.path: the jsonl source needs the pre-training file$"):
        get_kind("reasonformer_pretrain").run(hand_built(pre, "data", path=None), MemoryContext())
    files = {"train_path": "t.jsonl", "eval_path": "e.jsonl"}
    fine = ReasonFormerFinetuneSpec.model_validate({"data": {**text, **files}, "train": TINY_TRAIN})
    for name in files:
        with pytest.raises(
            RunError, match=rf"^data\.{name}: the jsonl source needs a training and an evaluation"
        ):
            get_kind("reasonformer_finetune").run(hand_built(fine, "data", **{name: None}), MemoryContext())


def test_jsonl_pretraining_in_the_run_scores_the_router_on_single_skill_tasks(stores: Stores) -> None:
    """The paper-scale path at toy size: pre-training on {skill, input, output} text in the run, then
    adaptation on text; the router's skill match is scored on the tasks named after a skill (not general)."""
    SymbolTokenizer(list("abcdefgh")).save(stores.models / "tok")
    rows = [
        f'{{"skill": "{skill}", "input": "{x} {y}", "output": "{y}"}}'
        for skill in ("qa", "logic", "general")
        for x in "abcd"
        for y in "efgh"
    ]
    (stores.data / "pre.jsonl").write_text("\n".join(rows) + "\n")
    (stores.data / "down.jsonl").write_text('{"input": "a b", "output": "b"}\n' * 6)
    down = {"source": "jsonl", "train_path": "down.jsonl", "eval_path": "down.jsonl", "tokenizer": "tok"}
    spec = ReasonFormerFinetuneSpec.model_validate(
        {
            "init": {
                "pretrain": {
                    "data": {
                        "source": "jsonl",
                        "path": "pre.jsonl",
                        "tokenizer": "tok",
                        "eval_fraction": 0.25,
                    },
                    "train": TINY_TRAIN,
                }
            },
            "data": down,
            "train": TINY_TRAIN,
        }
    )
    ctx = MemoryContext()
    get_kind("reasonformer_finetune").run(spec, ctx)
    assert 0.0 <= ctx.metrics["pretrain/routing/skill_match"][6] <= 1.0
    assert "pretrain/eval/qa" in ctx.metrics and "eval/average" in ctx.metrics
    assert ctx.results[0].pretrained and ctx.results[0].stage == "finetune"


def test_pretraining_data_with_a_skill_the_model_lacks_fails_naming_the_field(stores: Stores) -> None:
    SymbolTokenizer(["a", "b"]).save(stores.models / "tok")
    rows = ['{"skill": "juggle", "input": "a", "output": "b"}'] * 4 + [
        '{"skill": "qa", "input": "b", "output": "a"}'
    ]
    (stores.data / "skills.jsonl").write_text("\n".join(rows) + "\n")
    spec = ReasonFormerPretrainSpec.model_validate(
        {"data": {"source": "jsonl", "path": "skills.jsonl", "tokenizer": "tok"}, "train": TINY_TRAIN}
    )
    ctx = MemoryContext()
    with pytest.raises(RunError, match=r"^data\.path: the data has skills \['juggle'\] that the model lacks"):
        get_kind("reasonformer_pretrain").run(spec, ctx)
    assert ctx.metrics == {} and ctx.results == []  # refused before anything trained
