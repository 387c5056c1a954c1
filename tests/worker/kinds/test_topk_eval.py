"""The topk_eval kind: spec validation (422 paths), SMoE checkpoints at every k', HF MoE LMs, ReasonFormer's
skill router, and the in-run demo."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from tests.tiny_moe import cpu_budget_for_one_layer, tiny_moe
from tests.worker.kinds.sraven_context import MemoryContext
from tests.worker.stores import Stores
from worker.core.models import load_model
from worker.core.models.prepare import example_data
from worker.core.reasonformer.build import build_model
from worker.core.reasonformer.config import ReasoningConfig
from worker.core.reasonformer.data.synthetic import SkillSuite
from worker.core.reasonformer.data.tokenizer import SymbolTokenizer
from worker.core.topk.text import SAMPLE_TEXT
from worker.kinds import get_kind
from worker.kinds.reasonformer.common.saving import save_model
from worker.kinds.smoe import topk_eval
from worker.specs import manifests, result_class, spec_class
from worker.specs.base import MAX_EXAMPLE_ROWS
from worker.specs.smoe.smoe_sraven import SmoeSravenSpec, SravenCell
from worker.specs.smoe.topk_eval import HfTarget, ReasonFormerTarget, SmoeTarget, TopkEvalPoint, TopkEvalSpec
from worker.tracking.context import RunError

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.filterwarnings("ignore::worker.core.sraven.generator.OODMissesRuleWarning"),
]


def error_locs(spec: dict[str, Any]) -> list[tuple[Any, ...]]:
    with pytest.raises(ValidationError) as info:
        TopkEvalSpec.model_validate(spec)
    return [tuple(e["loc"]) for e in info.value.errors()]


def test_empty_spec_is_a_registered_in_run_demo() -> None:
    spec = spec_class("topk_eval").model_validate({})
    assert isinstance(spec, TopkEvalSpec) and spec.target.type == "smoe_sraven"
    assert isinstance(spec.target, SmoeTarget) and spec.target.trains_in_run
    assert spec.target.train_k == [1, 2, 8] and spec.known_experts() == 8
    manifest = manifests()["topk_eval"]
    assert manifest.result_kinds == ("topk_eval_point",)
    assert manifest.source_runs["target.run_id"] == "smoe_sraven"
    assert manifest.source_runs["target.finetune_run_id"] == "reasonformer_finetune"
    assert manifest.source_runs["smoe.run_id"] == "smoe_sraven"  # runs stored in the shape before the union
    assert manifest.source_runs["reasonformer.finetune_run_id"] == "reasonformer_finetune"


# specs in the shape before the union (target naming the type beside the sub-configs smoe, hf, reasonformer):
# they still load, and their errors are named as today's shape names them
LEGACY_CASES = [
        ({"eval_k": [0]}, ("eval_k", 0)),
        ({"eval_k": [1, 9]}, ("eval_k", 1)),  # the demo's SMoEs have 8 experts
        ({"smoe": {"train_k": [2, 9]}}, ("target", "smoe_sraven", "train_k", 1)),
        ({"target": "hf", "hf": {"model": "tiny-mixtral"}, "eval_k": [5]}, ("eval_k", 0)),
        ({"target": "hf", "hf": {"model": "allenai/OLMoE-1B-7B-0924"}, "eval_k": [8, 65]}, ("eval_k", 1)),
        ({"target": "hf", "hf": {"score": "multiple_choice"}}, ("target", "hf", "choices_path")),
        ({"target": "reasonformer"}, ("target", "reasonformer", "pretrain_run_id")),
        ({"smoe": {"run_id": 3, "path": "x"}}, ("target", "smoe_sraven", "path")),
        ({"eval_k": [2, 2]}, ("eval_k",)),
        ({"smoe": {"run_id": 0}}, ("target", "smoe_sraven", "run_id")),
        ({"target": "hf", "hf": {"device_map": "auto", "max_memory": {"1": "8GiB"}}, "resources": {"gpus": 1}}, ("target", "hf", "max_memory", "1")),
        ({"target": "hf", "hf": {"device_map": "auto", "max_memory": {"npu0": "8GiB"}}}, ("target", "hf", "max_memory", "npu0", "[key]")),
        ({"target": "hf", "hf": {"device_map": "auto", "max_memory": {"cpu": "8 GiBs"}}}, ("target", "hf", "max_memory", "cpu")),
        ({"target": "hf", "hf": {"max_memory": {"cpu": "8GiB"}}}, ("target", "hf", "max_memory")),
]  # fmt: skip
CASES = [
        ({"eval_k": [0]}, ("eval_k", 0)),
        ({"eval_k": [1, 9]}, ("eval_k", 1)),  # the demo's SMoEs have 8 experts
        ({"target": {"type": "smoe_sraven", "train_k": [2, 9]}}, ("target", "smoe_sraven", "train_k", 1)),
        ({"target": {"type": "hf", "model": "tiny-mixtral"}, "eval_k": [5]}, ("eval_k", 0)),
        ({"target": {"type": "hf", "model": "allenai/OLMoE-1B-7B-0924"}, "eval_k": [8, 65]}, ("eval_k", 1)),
        ({"target": {"type": "hf", "score": "multiple_choice"}}, ("target", "hf", "choices_path")),
        ({"target": {"type": "reasonformer"}}, ("target", "reasonformer", "pretrain_run_id")),
        ({"target": {"type": "smoe_sraven", "run_id": 3, "path": "x"}}, ("target", "smoe_sraven", "path")),
        ({"eval_k": [2, 2]}, ("eval_k",)),
        ({"target": {"type": "smoe_sraven", "run_id": 0}}, ("target", "smoe_sraven", "run_id")),
        ({"target": {"type": "hf", "device_map": "auto", "max_memory": {"1": "8GiB"}}, "resources": {"gpus": 1}}, ("target", "hf", "max_memory", "1")),
        ({"target": {"type": "hf", "device_map": "auto", "max_memory": {"npu0": "8GiB"}}}, ("target", "hf", "max_memory", "npu0", "[key]")),
        ({"target": {"type": "hf", "device_map": "auto", "max_memory": {"cpu": "8 GiBs"}}}, ("target", "hf", "max_memory", "cpu")),
        ({"target": {"type": "hf", "max_memory": {"cpu": "8GiB"}}}, ("target", "hf", "max_memory")),
        ({"target": {"train_k": [1]}}, ("target",)),  # the type is required: no guessing
        ({"target": {"type": "hf", "train_k": [1]}}, ("target", "hf", "train_k")),  # another type's field
        ({"target": "tpu"}, ("target",)),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "loc"), CASES)
def test_bad_specs_name_their_field(spec: dict[str, Any], loc: tuple[Any, ...]) -> None:
    assert loc in error_locs(spec)


@pytest.mark.parametrize(
    ("window", "max_tokens", "rows"),
    [
        (10, 10_000_000, 1_000_000),
        (2, 2_000_000, 1_000_000),
        (2, 2_000_001, 1_000_001),
        (9, 10_000_000, 1_111_112),
    ],
)
def test_a_perplexitys_windows_table_fits_the_platforms_row_cap(
    window: int, max_tokens: int, rows: int
) -> None:
    """A perplexity posts a row per window, ceil(max_tokens / window) of them: at the cap (1,000,000) the spec
    is valid, one row over it is a 422 at target.max_tokens saying both ways out; a multiple_choice score
    posts no windows and is not bound by them."""
    assert MAX_EXAMPLE_ROWS == 1_000_000 and -(-max_tokens // window) == rows
    target = {"type": "hf", "window": window, "max_tokens": max_tokens}
    if rows <= MAX_EXAMPLE_ROWS:
        spec = TopkEvalSpec.model_validate({"target": target})
        assert isinstance(spec.target, HfTarget) and spec.target.max_tokens == max_tokens
    else:
        with pytest.raises(ValidationError) as info:
            TopkEvalSpec.model_validate({"target": target})
        (error,) = info.value.errors()
        assert error["loc"] == ("target", "hf", "max_tokens")
        assert f"{rows:,} perplexity windows" in error["msg"] and "at most 1,000,000" in error["msg"]
        assert f"lower max_tokens to {window * MAX_EXAMPLE_ROWS:,}" in error["msg"]
        raised = -(-max_tokens // MAX_EXAMPLE_ROWS)
        assert f"raise window to {raised:,}" in error["msg"] and -(-max_tokens // raised) <= MAX_EXAMPLE_ROWS
    choices = {**target, "score": "multiple_choice", "choices_path": "choices.jsonl"}
    assert TopkEvalSpec.model_validate({"target": choices}).target.max_tokens == max_tokens  # type: ignore[union-attr]


@pytest.mark.parametrize(("spec", "loc"), LEGACY_CASES)
def test_bad_specs_of_the_shape_before_the_union_name_their_field(
    spec: dict[str, Any], loc: tuple[Any, ...]
) -> None:
    assert loc in error_locs(spec)


def test_a_spec_stored_in_the_shape_before_the_union_still_loads() -> None:
    """Runs store their validated spec (model_dump): before the union that was the selector beside all
    three sub-configs, two of them ignored. It loads as the selected target, the ignored ones dropped."""
    old = {
        "kind": "topk_eval",
        "seed": 3,
        "target": "hf",
        "smoe": {"run_id": None, "path": None, "train_k": [1, 2, 8], "eval_size": None},
        "hf": {"model": "tiny-olmoe", "score": "multiple_choice", "choices_path": "examples/choices.jsonl"},
        "reasonformer": {"pretrain_run_id": None, "eval_per_task": 16},
        "eval_k": [1, 2],
    }
    spec = TopkEvalSpec.model_validate(old)
    assert isinstance(spec.target, HfTarget) and spec.target.model == "tiny-olmoe"
    assert spec.target.choices_path == "examples/choices.jsonl" and spec.seed == 3 and spec.eval_k == [1, 2]
    dumped = spec.model_dump(mode="json")
    assert dumped["target"]["type"] == "hf" and not {"smoe", "hf", "reasonformer"} & set(dumped)
    assert TopkEvalSpec.model_validate(dumped) == spec
    bare = TopkEvalSpec.model_validate({"target": "reasonformer", "reasonformer": {"finetune_run_id": 7}})
    assert bare.target == ReasonFormerTarget(finetune_run_id=7)
    assert TopkEvalSpec.model_validate({"smoe": {"run_id": 4}}).target == SmoeTarget(run_id=4)
    assert TopkEvalSpec.model_validate({"target": "smoe_sraven"}) == TopkEvalSpec()


def test_k_above_experts_is_not_checked_where_the_spec_cannot_know_e() -> None:
    # a source run's E is only known when the run loads it
    assert TopkEvalSpec.model_validate({"smoe": {"run_id": 4}, "eval_k": [1, 16]}).eval_k == [1, 16]
    assert TopkEvalSpec.model_validate({"target": "hf", "hf": {"model": "mine/x"}, "eval_k": [9]}).eval_k == [
        9
    ]


def train_smoe(out_dir: Path, k: int = 2) -> SravenCell:
    spec = SmoeSravenSpec.model_validate(
        {
            "seed": 1,
            "data": {"num_features": 2},
            "model": {"d_model": 32, "num_layers": 2, "num_heads": 4, "qk_dim": 16, "v_dim": 16},
            "moe": {"num_experts": 8, "top_k": k, "expert_hidden": 32},
            "train": {"steps": 24, "batch_size": 16, "warmup_steps": 4, "eval_interval": 8, "eval_size": 96},
        }
    )
    ctx = MemoryContext(out_dir=out_dir)
    get_kind("smoe_sraven").run(spec, ctx)
    (cell,) = ctx.results
    return cell


def points(ctx: MemoryContext) -> list[TopkEvalPoint]:
    assert all(isinstance(r, TopkEvalPoint) for r in ctx.results)
    for r in ctx.results:
        result_class("topk_eval_point").model_validate(r.model_dump())
    return list(ctx.results)


def test_smoe_checkpoint_trained_at_k2_is_evaluated_at_every_k(tmp_path: Path, stores: Stores) -> None:
    cell = train_smoe(stores.models / "source")  # a run's outputs copied into the model store
    assert (stores.models / "source" / "model" / "config.json").is_file()
    spec = TopkEvalSpec.model_validate({"smoe": {"path": "source/model"}})
    ctx = MemoryContext(out_dir=tmp_path / "eval")
    get_kind("topk_eval").run(spec, ctx)
    got = points(ctx)
    assert [p.eval_k for p in got] == list(range(1, 9))
    assert {(p.train_k, p.num_experts, p.routers, p.renormalises, p.family, p.M) for p in got} == {
        (2, 8, 2, True, "smoe", 2)
    }
    at_2 = next(p for p in got if p.eval_k == 2)
    # k' = k is the source run's own final evaluation (same model, same test sets)
    assert at_2.value == pytest.approx(cell.test_acc) and at_2.ood_value == pytest.approx(cell.ood_acc)
    assert at_2.per_feature == pytest.approx(cell.per_feature_acc)
    assert len({p.extra["test_loss"] for p in got}) > 1, "k' changed nothing"
    assert ctx.metrics["test_acc/train_k2"].keys() == set(range(1, 9))
    # the per-example table: a problem a row, its score (all M right) at every k'; means give the points
    rows = ctx.examples["items"]
    for p in got:
        for name, value in (("test", p.value), ("ood", p.ood_value)):
            mine = [r["score"][str(p.eval_k)] for r in rows if r["set"] == name]
            assert len(mine) == (p.n if name == "test" else p.ood_n)
            assert sum(mine) / len(mine) == pytest.approx(value)
    assert rows[0]["key"] == "train_k2/test/0" and len(rows[0]["answer"]) == 2


def test_smoe_source_without_a_saved_model_fails_with_a_message(tmp_path: Path, stores: Stores) -> None:
    (stores.models / "empty").mkdir()
    spec = TopkEvalSpec.model_validate({"smoe": {"path": "empty"}})
    with pytest.raises(Exception, match="no saved SRAVEN model"):
        get_kind("topk_eval").run(spec, MemoryContext(out_dir=tmp_path / "eval"))


def test_in_run_demo_trains_each_k_and_fills_the_matrix(tmp_path: Path) -> None:
    spec = TopkEvalSpec.model_validate(
        {
            "smoe": {
                "train_k": [1, 4],
                "eval_size": 32,
                "demo": {
                    "model": {"d_model": 16, "num_layers": 1, "num_heads": 2, "qk_dim": 8, "v_dim": 8},
                    "moe": {"num_experts": 4, "expert_hidden": 16},
                    "train": {
                        "steps": 6,
                        "batch_size": 8,
                        "warmup_steps": 1,
                        "eval_interval": 6,
                        "eval_size": 32,
                    },
                },
            }
        }
    )
    ctx = MemoryContext(out_dir=tmp_path)
    get_kind("topk_eval").run(spec, ctx)
    got = points(ctx)
    assert [(p.train_k, p.eval_k) for p in got] == [(t, k) for t in (1, 4) for k in (1, 2, 3, 4)]
    assert {p.model for p in got} == {"in-run k=1", "in-run k=4"}
    assert "train/k1/loss" in ctx.metrics and "train/k4/loss" in ctx.metrics
    # each accuracy's problems (the test and OOD sets' sizes) for the dashboard's Wilson interval
    assert {(p.n, p.ood_n) for p in got} == {(32, 32)}
    # per-run readings of the best k, from the points (ties to the smaller k), at step 0
    for score, value_of in (("test_acc", lambda p: p.value), ("ood_acc", lambda p: p.ood_value)):
        rows = {t: {p.eval_k: value_of(p) for p in got if p.train_k == t} for t in (1, 4)}
        for t, row in rows.items():
            best = max(row.values())
            assert ctx.metrics[f"{score}/train_k{t}/best_eval_k"] == {
                0: min(k for k in row if row[k] == best)
            }
            assert ctx.metrics[f"{score}/train_k{t}/eval_regret"] == {0: pytest.approx(best - row[t])}
        diagonal = {t: rows[t][t] for t in (1, 4)}  # each model at its own k: a smoe_sraven cell each
        best = max(diagonal.values())
        assert ctx.metrics[f"{score}/best_train_k"] == {0: min(t for t in (1, 4) if diagonal[t] == best)}
        for t in (1, 4):
            assert ctx.metrics[f"{score}/train_regret/k{t}"] == {0: pytest.approx(best - diagonal[t])}
            # the diagonal is the training's own final evaluation, logged under its prefix
            steps = ctx.metrics[f"train/k{t}/{score}"]
            assert steps[max(steps)] == pytest.approx(diagonal[t])


def test_diagonal_readings_need_every_trained_model_at_its_own_k(tmp_path: Path) -> None:
    """eval_k without a trained k: that model has no diagonal cell, so no best trained k is logged (a best
    over the other models would be another quantity); each model's own row readings still are."""
    spec = TopkEvalSpec.model_validate(
        {
            "target": {
                "type": "smoe_sraven",
                "train_k": [1, 4],
                "eval_size": 16,
                "demo": {
                    "model": {"d_model": 16, "num_layers": 1, "num_heads": 2, "qk_dim": 8, "v_dim": 8},
                    "moe": {"num_experts": 4, "expert_hidden": 16},
                    "train": {
                        "steps": 2,
                        "batch_size": 8,
                        "warmup_steps": 1,
                        "eval_interval": 2,
                        "eval_size": 16,
                    },
                },
            },
            "eval_k": [1, 2],
        }
    )
    ctx = MemoryContext(out_dir=tmp_path)
    get_kind("topk_eval").run(spec, ctx)
    assert "test_acc/best_train_k" not in ctx.metrics
    assert not [key for key in ctx.metrics if "train_regret" in key]
    assert "test_acc/train_k4/best_eval_k" in ctx.metrics and "test_acc/train_k1/eval_regret" in ctx.metrics
    assert "test_acc/train_k4/eval_regret" not in ctx.metrics  # k' = 4 was not evaluated


@pytest.mark.heavy
def test_hf_mixtral_perplexity_changes_with_k() -> None:
    spec = TopkEvalSpec.model_validate(
        {"target": "hf", "hf": {"model": "tiny-mixtral", "window": 32}, "eval_k": [1, 4]}
    )
    ctx = MemoryContext()
    get_kind("topk_eval").run(spec, ctx)
    one, four = points(ctx)
    assert (one.eval_k, four.eval_k, one.train_k, one.num_experts, one.routers) == (1, 4, 2, 4, 4)
    assert one.family == "mixtral" and one.renormalises is True and one.score == "perplexity"
    assert not one.higher_is_better and one.value != four.value and one.value > 1.0
    assert one.n is None  # a perplexity is no proportion: no interval
    assert one.extra["tokens"] > 100
    # the row's readings: a perplexity is better low
    best = min((one, four), key=lambda p: (p.value, p.eval_k))
    assert ctx.metrics["perplexity/train_k2/best_eval_k"] == {0: best.eval_k}
    assert "perplexity/train_k2/eval_regret" not in ctx.metrics  # its own k (2) was not evaluated


@pytest.mark.heavy
def test_hf_perplexity_posts_a_row_per_window_with_its_nll_at_every_k() -> None:
    spec = TopkEvalSpec.model_validate(
        {"target": "hf", "hf": {"model": "tiny-mixtral", "window": 48, "max_tokens": 200}, "eval_k": [1, 4]}
    )
    ctx = MemoryContext()
    get_kind("topk_eval").run(spec, ctx)
    one, four = points(ctx)
    rows = ctx.examples["windows"]
    ids = load_model("tiny-mixtral").tokenizer(SAMPLE_TEXT)["input_ids"][:200]
    assert [(r["key"], r["window"], r["offset"], r["tokens"]) for r in rows] == [
        (f"window-{n}", n, 48 * n, len(ids[48 * n : 48 * n + 48]) - 1) for n in range(5)
    ]  # four of 48 tokens and the 8 left over
    assert sum(r["tokens"] for r in rows) == one.extra["tokens"] == 4 * 47 + 7
    tokenizer = load_model("tiny-mixtral").tokenizer
    for r in rows:  # the window's decoded text, cut at 160 characters
        whole = str(tokenizer.decode(ids[r["offset"] : r["offset"] + 48], skip_special_tokens=True))
        assert len(r["text"]) <= topk_eval.PREVIEW_CHARS and r["text"]
        assert r["text"] == whole or (r["text"].endswith("…") and whole.startswith(r["text"][:-1]))
    assert rows[0]["text"].endswith("…") and rows[-1]["text"] == tokenizer.decode(ids[192:200])
    for p in (one, four):  # the windows' NLLs, weighted by their tokens, are the run's
        k = str(p.eval_k)
        mean = sum(r["nll"][k] * r["tokens"] for r in rows) / sum(r["tokens"] for r in rows)
        assert mean == pytest.approx(p.extra["nll"], rel=1e-9) and math.exp(mean) == pytest.approx(p.value)
        assert all(r["perplexity"][k] == pytest.approx(math.exp(r["nll"][k])) for r in rows)
    assert any(r["nll"]["1"] != r["nll"]["4"] for r in rows), "k' changed no window"


@pytest.mark.heavy
def test_hf_model_split_over_cpu_and_disk_scores_what_the_single_device_model_scores(
    tmp_path: Path, stores: Stores
) -> None:
    tiny_moe(stores.models / "mixtral", "mixtral")  # the offload folder goes under the cache root too
    name = "mixtral"
    budget = cpu_budget_for_one_layer(load_model(name).model)
    hf = {"model": name, "window": 16, "max_tokens": 64}
    placed = {**hf, "device_map": "auto", "max_memory": {"cpu": f"{budget}B"}}
    runs = []
    for target in (hf, placed):
        ctx = MemoryContext(out_dir=tmp_path)
        get_kind("topk_eval").run(TopkEvalSpec.model_validate({"target": "hf", "hf": target}), ctx)
        runs.append(ctx)
    single, split = (points(ctx) for ctx in runs)
    assert [p.eval_k for p in split] == [1, 2, 3, 4] and all(p.routers == 2 for p in split)
    assert [p.value for p in split] == pytest.approx([p.value for p in single], rel=1e-5)
    assert len({round(p.value, 6) for p in split}) > 1  # k' reached the router on the disk too
    assert set(runs[1].params["derived"]["device_map"].values()) == {"cpu", "disk"}
    assert "device_map" not in runs[0].params["derived"]


def test_hf_olmoe_multiple_choice_records_a_non_renormalising_router(stores: Stores) -> None:
    example_data()  # `make offline` copies the repository's examples/*.jsonl into the data store
    spec = TopkEvalSpec.model_validate(
        {
            "target": "hf",
            "hf": {
                "model": "tiny-olmoe",
                "score": "multiple_choice",
                "choices_path": "examples/choices.jsonl",
            },
            "eval_k": [1, 2],
        }
    )
    ctx = MemoryContext()
    get_kind("topk_eval").run(spec, ctx)
    got = points(ctx)
    assert [p.eval_k for p in got] == [1, 2]
    assert all(p.family == "olmoe" and p.renormalises is False and 0.0 <= p.value <= 1.0 for p in got)
    assert got[0].extra["items"] == 6
    assert {p.n for p in got} == {6}
    rows = ctx.examples["items"]
    assert [r["key"] for r in rows] == [f"item-{n}" for n in range(6)]
    for p in got:
        assert sum(r["score"][str(p.eval_k)] for r in rows) / 6 == pytest.approx(p.value)
        assert all(
            r["score"][str(p.eval_k)] == float(r["chosen"][str(p.eval_k)] == r["answer"]) for r in rows
        )
    # the row's readings: the best k' (ties to the smaller) and the trained k's (2) regret
    best = max(got, key=lambda p: (p.value, -p.eval_k))
    assert ctx.metrics["choice_accuracy/train_k2/best_eval_k"] == {0: best.eval_k}
    assert ctx.metrics["choice_accuracy/train_k2/eval_regret"] == {
        0: pytest.approx(best.value - got[1].value)
    }


def test_reasonformer_skill_router_at_every_k(tmp_path: Path, stores: Stores) -> None:
    suite = SkillSuite()
    tok = SymbolTokenizer(suite.vocabulary())
    rc = ReasoningConfig(
        skills=("reverse", "sort", "shift", "lookup", "rotate", "general"),
        variant="shared",
        depth=2,
        representation_layers=2,
        module_layers=1,
        top_k=2,
        adapter_bottleneck=8,
        router_hidden=16,
    )
    save_model(build_model("shared", "t5-tiny", rc, vocab_size=tok.vocab_size), tok, stores.models)
    spec = TopkEvalSpec.model_validate(
        {
            "target": "reasonformer",
            "reasonformer": {"path": "model", "eval_per_task": 2, "examples": "pretrain"},
            "eval_k": [1, 3, 6],
        }
    )
    ctx = MemoryContext(out_dir=tmp_path / "eval")
    get_kind("topk_eval").run(spec, ctx)
    got = points(ctx)
    assert [(p.train_k, p.eval_k) for p in got] == [(2, 1), (2, 3), (2, 6)]
    assert {(p.family, p.num_experts, p.routers, p.renormalises, p.score) for p in got} == {
        ("reasonformer", 6, 1, True, "eval_average")
    }
    assert all(0.0 <= p.value <= 1.0 for p in got) and got[0].extra
    # pretrain examples: 2 per program, every program alike, so the average is a proportion of all of them
    assert {p.n for p in got} == {len(suite.pretrain_eval(np.random.default_rng(0), 2))}
    rows = ctx.examples["items"]
    assert len(rows) == got[0].n and len({r["key"] for r in rows}) == len(rows)
    for p in got:
        assert sum(r["score"][str(p.eval_k)] for r in rows) / len(rows) == pytest.approx(p.value)
    assert all(set(r["prediction"]) == {"1", "3", "6"} and r["gold"] for r in rows)
    best = max(got, key=lambda p: (p.value, -p.eval_k))
    assert ctx.metrics["eval_average/train_k2/best_eval_k"] == {0: best.eval_k}
    assert "eval_average/train_k2/eval_regret" not in ctx.metrics  # its trained k (2) is no k' here


def test_a_k_above_the_loaded_models_experts_fails_the_run(tmp_path: Path, stores: Stores) -> None:
    train_smoe(stores.models / "source")
    spec = TopkEvalSpec.model_validate({"smoe": {"path": "source/model"}, "eval_k": [2, 12]})
    with pytest.raises(Exception, match=r"eval_k: k' \[12\] above the model's 8 experts"):
        get_kind("topk_eval").run(spec, MemoryContext(out_dir=tmp_path / "eval"))


def test_a_hand_built_target_without_its_file_or_model_fails_naming_the_field() -> None:
    choices = TopkEvalSpec.model_validate(
        {
            "target": {
                "type": "hf",
                "model": "tiny-olmoe",
                "score": "multiple_choice",
                "choices_path": "c.jsonl",
            }
        }
    )
    assert isinstance(choices.target, HfTarget)
    bad = choices.model_copy(update={"target": choices.target.model_copy(update={"choices_path": None})})
    with pytest.raises(
        RunError, match=r"^target\.hf\.choices_path: score multiple_choice needs a JSONL file"
    ):
        get_kind("topk_eval").run(bad, MemoryContext())
    named = TopkEvalSpec.model_validate({"target": {"type": "reasonformer", "path": "model"}})
    assert isinstance(named.target, ReasonFormerTarget)
    bad = named.model_copy(update={"target": named.target.model_copy(update={"path": None})})
    with pytest.raises(RunError, match=r"^target\.reasonformer\.path: name the model by pretrain_run_id"):
        get_kind("topk_eval").run(bad, MemoryContext())
