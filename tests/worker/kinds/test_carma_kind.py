"""The carma kind: spec validation with field paths, the four tiny families trained under it, the
variants' records, and a clear failure for a model that cannot be found."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tests.worker.kinds.sraven_context import MemoryContext
from worker.core.data.offline import data_root
from worker.kinds import get_kind
from worker.local import run_local
from worker.specs import manifest
from worker.specs.carma.carma import CapCurve, CarmaEval, CarmaSpec, SynonymConsistency
from worker.tracking.context import RunError

pytestmark = pytest.mark.usefixtures(
    "one_thread", "stores"
)  # data files go into a data store of the test's own

# answers that are one token in the GPT-2, Llama 3, Qwen and Gemma 3 tokenizers
IDM_ROWS = [
    ("a domesticated carnivorous mammal kept as a pet", "dog"),
    ("a building where people live together", "house"),
    ("a clear liquid that falls as rain", "water"),
    ("a tall perennial woody plant with branches", "tree"),
    ("a small domesticated feline animal", "cat"),
] * 4  # 20 rows: 16 train, 2 validation, 2 test
SYNONYMS = {
    "domesticated": ["tame"],
    "building": ["edifice"],
    "liquid": ["fluid"],
    "tall": ["high"],
    "small": ["little"],
}


def error_locs(spec: dict[str, Any]) -> list[tuple[Any, ...]]:
    with pytest.raises(ValidationError) as info:
        CarmaSpec.model_validate(spec)
    return [tuple(e["loc"]) for e in info.value.errors()]


@pytest.mark.parametrize(
    ("spec", "loc"),
    [
        ({"carma": {"lambda": 1.5}}, ("carma", "lambda")),
        ({"carma": {"lambda": -0.1}}, ("carma", "lambda")),
        ({"carma": {"layers": []}}, ("carma", "layers")),
        ({"carma": {"layers": [5, 2]}}, ("carma", "layers")),
        ({"carma": {"layers": [0, 30]}}, ("carma", "layers")),  # smollm2-135m has blocks 0..29
        ({"model": {"name": "tiny-llama"}, "carma": {"layers": [1, 4]}}, ("carma", "layers")),
        ({"carma": {"stability_layers": [3, 1]}}, ("carma", "stability_layers")),
        ({"carma": {"stability_layers": [0, 30]}}, ("carma", "stability_layers")),
        ({"cap": {"layers": [0, 31]}}, ("cap", "layers")),
        ({"synonyms": {"source": "thesaurus"}}, ("synonyms", "source")),
        ({"synonyms": {"seeds": [0, 1, 2]}}, ("synonyms", "seeds")),
        ({"synonyms": {"source": "json"}}, ("synonyms", "map_path")),
        ({"data": {"task": "sc"}}, ("data", "source")),
        ({"data": {"source": "jsonl"}}, ("data", "path")),
        ({"data": {"prompt": "no placeholder"}}, ("data", "prompt")),
        ({"variant": "lora"}, ("variant",)),
    ],
)
def test_bad_specs_name_the_field(spec: dict[str, Any], loc: tuple[str, ...]) -> None:
    assert error_locs(spec) == [loc]


def test_empty_spec_and_every_example_are_valid() -> None:
    spec = CarmaSpec.model_validate({})
    assert (spec.variant, spec.model.name, spec.data.task, spec.carma.lambda_) == (
        "carma",
        "smollm2-135m",
        "idm",
        0.2,
    )
    assert spec.model_dump(mode="json")["carma"]["lambda"] == 0.2
    assert CarmaSpec.model_validate({"model": {"name": "some/hub-model"}, "carma": {"layers": [0, 90]}})
    for example in manifest("carma").examples:
        CarmaSpec.model_validate(dict(example.spec))


# appendix B.3's stopping layers (IDM; SC for the sst example), which the paper counts from 1 like
# section 3.2's "layers 3-4 in 12-layer models": the spec's last block is the stopping layer - 1
B3_STOPPING_LAYERS = {
    "paper-gpt2-small-idm": 3,
    "paper-gpt2-large-idm": 8,
    "paper-llama-3.2-1b-idm": 7,
    "paper-llama-3.2-3b-idm": 12,
    "paper-qwen2.5-0.5b-idm": 5,
    "paper-qwen2.5-3b-idm": 10,
    "paper-gemma-2b-idm": 10,
    "paper-sst-gpt2-small": 4,
}


def test_paper_examples_read_b3_stopping_layers_counted_from_1() -> None:
    examples = {e.name: CarmaSpec.model_validate(dict(e.spec)) for e in manifest("carma").examples}
    assert {name for name in examples if name.startswith("paper-")} == set(B3_STOPPING_LAYERS)
    for name, stop in B3_STOPPING_LAYERS.items():
        layers = examples[name].carma.layers
        assert layers is not None and layers[1] == stop - 1, (name, layers)
    # Llama-3B's separate ranges: MI to layer 12, stability to layer 8
    llama = examples["paper-llama-3.2-3b-idm"].carma
    assert (llama.layers, llama.stability_layers) == ([6, 11], [6, 7])
    assert all(e.carma.stability_layers is None for n, e in examples.items() if n != "paper-llama-3.2-3b-idm")


def write_data(tmp_path: Path) -> tuple[str, str]:
    """The data and synonym files in the offline data store (the ``stores`` fixture's), named relative to it."""
    store = data_root() / tmp_path.name
    store.mkdir(parents=True, exist_ok=True)
    (store / "idm.jsonl").write_text("".join(json.dumps({"text": t, "label": w}) + "\n" for t, w in IDM_ROWS))
    (store / "synonyms.json").write_text(json.dumps(SYNONYMS))
    return f"{tmp_path.name}/idm.jsonl", f"{tmp_path.name}/synonyms.json"


def tiny_spec(tmp_path: Path, model: str, **extra: Any) -> CarmaSpec:
    data, synonyms = write_data(tmp_path)
    spec: dict[str, Any] = {
        "seed": 1,
        "model": {"name": model},
        "data": {"source": "jsonl", "path": data},
        "carma": {"lambda": 0.3, "layers": [0, 1]},
        "train": {"batch_size": 4, "max_steps": 3, "warmup_steps": 1, "eval_interval": 2, "log_every": 1},
        "cap": {"points": 2},
        "synonyms": {"source": "json", "map_path": synonyms},
    }
    spec.update(extra)
    return CarmaSpec.model_validate(spec)


def assert_claim_metrics(
    ctx: MemoryContext, curves: list[CapCurve], synonyms: list[SynonymConsistency], step: int
) -> None:
    """What claims compare is in the metrics table, at the training's last step, equal to the records:
    CAP at start layers 0 (depth 0: early) and 3 (depth 1: late) averaged over the protocols; per rate
    ConsistSyn's mean over the seeds and its CV, left out where no test item was correct before."""
    early = sum(c.points[0].accuracy for c in curves) / len(curves)
    late = sum(c.points[-1].accuracy for c in curves) / len(curves)
    assert ctx.metrics["cap/early_acc"] == {step: pytest.approx(early)}
    assert ctx.metrics["cap/late_acc"] == {step: pytest.approx(late)}
    assert ctx.metrics["cap/early_minus_late_acc"] == {step: pytest.approx(early - late)}
    assert "cap/middle_acc" not in ctx.metrics  # no start layer between 25% and 75% of the depth
    for s, key in zip(synonyms, ("25", "40"), strict=True):
        if s.correct_before == 0:
            assert f"consist_syn/{key}" not in ctx.metrics and f"consist_syn_cv/{key}" not in ctx.metrics
        else:
            assert ctx.metrics[f"consist_syn/{key}"] == {step: pytest.approx(s.mean)}
            assert ctx.metrics[f"consist_syn_cv/{key}"] == {step: pytest.approx(s.cv)}


@pytest.mark.parametrize("model", ["tiny-gpt2", "tiny-llama", "tiny-qwen2", "tiny-gemma"])
@pytest.mark.heavy
def test_each_family_trains_under_the_kind(tmp_path: Path, model: str) -> None:
    ctx = MemoryContext()
    get_kind("carma").run(tiny_spec(tmp_path, model), ctx)
    evals = [r for r in ctx.results if isinstance(r, CarmaEval)]
    curves = [r for r in ctx.results if isinstance(r, CapCurve)]
    synonyms = [r for r in ctx.results if isinstance(r, SynonymConsistency)]
    assert len(evals) == 1 and evals[0].steps == 3 and evals[0].best_step in (2, 3)
    assert (evals[0].train_size, evals[0].validation_size, evals[0].test_size) == (16, 2, 2)
    assert sorted(c.protocol for c in curves) == ["max", "mean", "sum"]
    assert [p.layer for p in curves[0].points] == [0, 3] and curves[0].points[-1].depth == 1.0
    assert [s.rate for s in synonyms] == [0.25, 0.4] and all(len(s.consist_syn) == 5 for s in synonyms)
    # the per-example table: a row per rate, seed and originally-correct item; its flips make ConsistSyn
    rows = ctx.examples.get("synonyms", [])
    assert len(rows) == sum(s.correct_before * len(s.seeds) for s in synonyms)
    for s in synonyms:
        for n, seed in enumerate(s.seeds):
            mine = [r for r in rows if r["rate"] == s.rate and r["seed"] == seed]
            if mine:
                assert 100.0 * sum(r["correct_after"] for r in mine) / len(mine) == pytest.approx(
                    s.consist_syn[n]
                )
    for row in rows:
        assert row["key"] == f"rate-{row['rate']:g}/seed-{row['seed']}/item-{row['item']}"
        assert row["prediction_before"] == row["label"] or row["label"].startswith(row["prediction_before"])
        assert (
            isinstance(row["prediction_after"], str) and row["original"] != "" and row["replaced_text"] != ""
        )
    for key in (
        "loss",
        "task_loss",
        "mi_loss",
        "stability_loss",
        "carma_loss",
        "step_time",
        "validation_acc",
    ):
        assert key in ctx.metrics, key
    assert ctx.params["derived"]["carma_layers"] == [0, 1]
    assert_claim_metrics(ctx, curves, synonyms, step=3)
    if model == "tiny-gpt2":  # GPT-2 splits "domesticated", "carnivorous", ...: positive pairs
        assert ctx.metrics["mi_pairs"][1] > 0
    else:  # Gemma's 262k vocabulary keeps most of these words whole: batches without pairs, MI 0, no crash
        assert all(v >= 0 for v in ctx.metrics["mi_loss"].values())


def test_a_separate_stability_range_reaches_the_objective_and_the_record(tmp_path: Path) -> None:
    ctx = MemoryContext()
    spec = tiny_spec(
        tmp_path,
        "tiny-gpt2",
        carma={"lambda": 0.3, "layers": [1, 2], "stability_layers": [0, 1]},
        cap={"enabled": False},
    )
    get_kind("carma").run(spec, ctx)
    (record,) = [r for r in ctx.results if isinstance(r, CarmaEval)]
    assert (record.layers, record.stability_layers) == ([1, 2], [0, 1])
    derived = ctx.params["derived"]
    assert (derived["carma_layers"], derived["carma_stability_layers"]) == ([1, 2], [0, 1])


def test_ft_monitors_the_regularisers_and_original_does_not_train(tmp_path: Path) -> None:
    ft = MemoryContext()
    get_kind("carma").run(tiny_spec(tmp_path, "tiny-gpt2", variant="ft", cap={"enabled": False}), ft)
    (record,) = [r for r in ft.results if isinstance(r, CarmaEval)]
    assert record.lambda_ == 0.0 and record.layers is None and "mi_loss" in ft.metrics
    assert ft.metrics["loss"] == ft.metrics["task_loss"]  # lambda 0: the total is the task loss
    original = MemoryContext()
    get_kind("carma").run(
        tiny_spec(tmp_path, "tiny-gpt2", variant="original", synonyms={"enabled": False}), original
    )
    (record,) = [r for r in original.results if isinstance(r, CarmaEval)]
    assert record.lambda_ is None and record.steps == 0 and record.best_step is None
    assert "loss" not in original.metrics and {r.kind for r in original.results} == {
        "carma_eval",
        "cap_curve",
    }


def test_a_model_that_cannot_be_found_fails_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # huggingface_hub reads the variable once, at import: when an earlier test imported it, only the constant
    # keeps this test off the network (else 90 s of connection retries on a machine without one)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    # neither a preset, an alias, a folder of the model store nor a hub id this machine can load
    spec = tiny_spec(tmp_path, "no-such-model")
    with pytest.raises(RunError, match=r"^model\.name: cannot load model"):
        get_kind("carma").run(spec, MemoryContext())
    outcome = run_local(spec.model_dump(mode="json"), out_dir=tmp_path / "run")
    assert outcome.status == "failed" and outcome.error is not None
    assert (
        outcome.error.startswith("RunError: model.name: cannot load model")
        and "Traceback" not in outcome.error
    )


@pytest.mark.parametrize("source", ["jsonl", "csv"])
def test_a_hand_built_spec_without_its_data_file_fails_naming_the_field(tmp_path: Path, source: str) -> None:
    spec = tiny_spec(tmp_path, "tiny-gpt2")
    bad = spec.model_copy(update={"data": spec.data.model_copy(update={"source": source, "path": None})})
    ctx = MemoryContext()
    with pytest.raises(RunError, match=rf"^data\.path: the {source} source needs a file$"):
        get_kind("carma").run(bad, ctx)
    assert ctx.params == {} and ctx.results == []  # refused before anything was logged


def test_synonym_metrics_name_each_rate_in_percent_and_skip_a_rate_without_correct_items() -> None:
    from worker.core.synonyms.evaluate import SynonymOutcome
    from worker.kinds.carma.common.synonyms import rate_key, synonym_metrics

    assert [rate_key(r) for r in (0.25, 0.4, 0.07, 1 / 3, 1.0)] == ["25", "40", "7", "33.3333", "100"]
    seeds = [0, 1, 2, 3, 4]
    values = [50.0, 60.0, 40.0, 50.0, 50.0]  # mean 50, population std sqrt(40): CV 0.12649
    outcomes = [
        SynonymOutcome(0.25, seeds, values, 50.0, 40**0.5, 40**0.5 / 50, 10, [10] * 5),
        SynonymOutcome(0.4, seeds, [0.0] * 5, 0.0, 0.0, 0.0, 0, [0] * 5),  # nothing was correct before
    ]
    assert synonym_metrics(outcomes) == {"consist_syn/25": 50.0, "consist_syn_cv/25": pytest.approx(0.126491)}
