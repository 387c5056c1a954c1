"""The ``topk_eval`` kind: inference-time experts-per-token against a cheap score, for any model with routers
in the lab (SMoE paper 004, section 2.1: the top-k axis). One knob, every router
(``worker/core/models/routers.py``): a model trained at k is evaluated at every k' of ``eval_k``.

Targets (``target``, a union discriminated by ``target.type``; a spec of the shape before it, ``target``
naming the type beside three sub-configs ``smoe``, ``hf``, ``reasonformer``, still loads):
- ``smoe_sraven``: our SMoE trained on SRAVEN, from a ``smoe_sraven`` run (``target.run_id``), a saved
  folder (``target.path``) or, with neither, tiny SMoEs trained in this run at each ``target.train_k`` (the
  ``{}`` CPU demo); score: SRAVEN ID-test accuracy (all M right), with OOD and per-feature accuracy.
- ``hf``: an HF mixture-of-experts causal LM (model-store name, path or tiny preset); score: perplexity on
  a text file, or multiple-choice accuracy on a JSONL.
- ``reasonformer``: the skill router of a ``reasonformer_pretrain`` or ``reasonformer_finetune`` run;
  score: the synthetic suite's average accuracy.

docs/experiments/topk_eval.md.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from worker.specs.base import MAX_EXAMPLE_ROWS, SpecBase, StrictModel
from worker.specs.confine import DataPath, ModelFolder, ModelName
from worker.specs.manifest import Example, KindManifest
from worker.specs.placement import (
    DEVICE_MAP_DESCRIPTION,
    MAX_MEMORY_DESCRIPTION,
    DeviceMapName,
    MaxMemory,
    placement_errors,
)
from worker.specs.smoe.smoe_sraven import SravenData, SravenModel, SravenTrain
from worker.specs.suite import SuiteSpec

# Experts per router of the models the platform can name, so a k' above E is a 422 before the run starts;
# other models are checked when the run loads them. The tiny presets are worker/core/models/presets.py's.
KNOWN_EXPERTS: dict[str, int] = {
    "tiny-mixtral": 4,
    "tiny-qwen2-moe": 4,
    "tiny-olmoe": 4,
    "mistralai/Mixtral-8x7B-v0.1": 8,
    "mistralai/Mixtral-8x7B-Instruct-v0.1": 8,
    "mistralai/Mixtral-8x22B-v0.1": 8,
    "Qwen/Qwen1.5-MoE-A2.7B": 60,
    "Qwen/Qwen1.5-MoE-A2.7B-Chat": 60,
    "allenai/OLMoE-1B-7B-0924": 64,
    "allenai/OLMoE-1B-7B-0924-Instruct": 64,
    "databricks/dbrx-base": 16,
    "databricks/dbrx-instruct": 16,
}

K = Annotated[int, Field(ge=1, le=1024)]


def _distinct(values: list[int]) -> list[int]:
    if len(set(values)) != len(values):
        raise ValueError(f"values must be distinct, got {values}")
    return sorted(values)


class SmoeDemoMoE(StrictModel):
    num_experts: int = Field(8, ge=1, le=256, description="E of the in-run SMoEs (paper: 8)")
    expert_hidden: int = Field(64, ge=1, le=65536, description="hidden width of each expert's MLP")


class SmoeDemo(StrictModel):
    """The SMoEs trained in this run when no source is named: one per ``train_k``, same seed and data."""

    data: SravenData = Field(
        default_factory=lambda: SravenData(num_features=1),
        description="SRAVEN task (demo: M = 1, learnt in a few hundred steps on CPU)",
    )
    model: SravenModel = Field(
        default_factory=lambda: SravenModel(
            d_model=64, num_layers=2, num_heads=8, qk_dim=32, v_dim=32, mlp_hidden=128
        ),
        description="the transformer (demo: half the reference width, 2 blocks)",
    )
    moe: SmoeDemoMoE = Field(default_factory=SmoeDemoMoE)
    train: SravenTrain = Field(
        default_factory=lambda: SravenTrain(
            batch_size=64,
            steps=600,
            lr=3e-3,
            warmup_steps=50,
            eval_interval=600,
            eval_size=512,
            checkpoint_every=600,
            log_every=50,
        ),
        description="training of each SMoE (smoe_sraven's train fields)",
    )


class SmoeTarget(StrictModel):
    """Our SMoE on SRAVEN: a ``smoe_sraven`` run's model, a saved folder, or SMoEs trained in this run."""

    type: Literal["smoe_sraven"] = "smoe_sraven"
    run_id: int | None = Field(
        None, ge=1, description="a succeeded smoe_sraven run: the model it saved (its outputs' model/)"
    )
    path: ModelFolder | None = Field(
        None,
        min_length=1,
        max_length=1000,
        description="a folder smoe_sraven saved (its outputs/model), copied into the model store: relative "
        "to the model store",
    )
    train_k: list[K] = Field(
        default_factory=lambda: [1, 2, 8],
        min_length=1,
        max_length=16,
        description="without run_id or path: train a fresh SMoE at each k in this run (the rows of the matrix)",
    )
    demo: SmoeDemo = Field(default_factory=SmoeDemo, description="the SMoEs trained in-run (train_k)")
    eval_size: int | None = Field(
        None, ge=1, le=1_000_000, description="problems per ID-test/OOD set; null = the source run's"
    )
    eval_batch_size: int = Field(1024, ge=1, le=1_000_000, description="problems per evaluation forward")

    @field_validator("train_k")
    @classmethod
    def _train_k_distinct(cls, train_k: list[int]) -> list[int]:
        return _distinct(train_k)

    @field_validator("path")
    @classmethod
    def _one_source(cls, path: str | None, info: ValidationInfo) -> str | None:
        if path is not None and info.data.get("run_id") is not None:
            raise ValueError("name the model by run_id or by path, not both")
        return path

    @property
    def trains_in_run(self) -> bool:
        return self.run_id is None and self.path is None


class HfTarget(StrictModel):
    """An HF mixture-of-experts causal LM: perplexity on a text, or multiple-choice accuracy."""

    type: Literal["hf"] = "hf"
    model: ModelName = Field(
        "tiny-mixtral",
        min_length=1,
        max_length=500,
        description="a tiny preset (tiny-mixtral, tiny-qwen2-moe, tiny-olmoe), a store alias, a folder of the "
        "model store (relative to it) or an HF id of an MoE causal LM",
    )
    score: Literal["perplexity", "multiple_choice"] = Field(
        "perplexity", description="perplexity on text_path, or accuracy on choices_path"
    )
    text_path: DataPath | None = Field(
        None,
        min_length=1,
        max_length=1000,
        description="UTF-8 text for perplexity, in the data store (relative to it); null = a built-in "
        "paragraph",
    )
    choices_path: DataPath | None = Field(
        None,
        min_length=1,
        max_length=1000,
        validate_default=True,
        description='JSONL of {"question", "choices": [...], "answer": index} for multiple_choice, in the '
        "data store (relative to it)",
    )
    window: int = Field(
        128, ge=2, le=32768, description="tokens per perplexity window (independent contexts)"
    )
    max_tokens: int = Field(
        4096,
        ge=2,
        le=10_000_000,
        description="cap on the text's tokens; a perplexity posts a row per window to its `windows` table, "
        f"so max_tokens / window (rounded up) is at most {MAX_EXAMPLE_ROWS:,}",
    )
    limit: int | None = Field(None, ge=1, le=1_000_000, description="first items of choices_path; null = all")
    batch_size: int = Field(8, ge=1, le=4096, description="windows per forward")
    dtype: Literal["float32", "bfloat16", "float16"] = Field(
        "float32", description="weights' dtype (bfloat16 for large models)"
    )
    device_map: DeviceMapName | None = Field(None, description=DEVICE_MAP_DESCRIPTION)
    max_memory: MaxMemory | None = Field(None, description=MAX_MEMORY_DESCRIPTION)

    @field_validator("max_tokens")
    @classmethod
    def _windows_fit_a_table(cls, max_tokens: int, info: ValidationInfo) -> int:
        """A perplexity posts a row per window (the ``windows`` table): at most ceil(max_tokens / window),
        which must fit the platform's per-table cap; refused here, before the run, not cut short in it."""
        window = info.data.get("window")
        if info.data.get("score") != "perplexity" or not isinstance(window, int):
            return max_tokens
        windows = -(-max_tokens // window)
        if windows > MAX_EXAMPLE_ROWS:
            raise ValueError(
                f"max_tokens {max_tokens:,} / window {window:,} is {windows:,} perplexity windows, a row each in "
                f"the run's windows table, which holds at most {MAX_EXAMPLE_ROWS:,}: lower max_tokens to "
                f"{window * MAX_EXAMPLE_ROWS:,} or raise window to {-(-max_tokens // MAX_EXAMPLE_ROWS):,}"
            )
        return max_tokens

    @field_validator("choices_path")
    @classmethod
    def _choices_for_multiple_choice(cls, path: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("score") == "multiple_choice" and path is None:
            raise ValueError("score multiple_choice needs choices_path (a JSONL file)")
        return path


class ReasonFormerTarget(StrictModel):
    """The skill router of a ReasonFormer run or saved folder: the synthetic suite's average accuracy."""

    type: Literal["reasonformer"] = "reasonformer"
    pretrain_run_id: int | None = Field(None, ge=1, description="a succeeded reasonformer_pretrain run")
    finetune_run_id: int | None = Field(None, ge=1, description="a succeeded reasonformer_finetune run")
    path: ModelFolder | None = Field(
        None,
        min_length=1,
        max_length=1000,
        description="a saved ReasonFormer folder (a run's outputs/model, copied into the model store), "
        "relative to the model store",
    )
    suite: SuiteSpec = Field(
        default_factory=SuiteSpec, description="the synthetic suite the model was trained on (same settings)"
    )
    examples: Literal["auto", "pretrain", "downstream"] = Field(
        "auto",
        description="pretrain: the pre-training kind's evaluation set (every program); downstream: the "
        "suite's downstream tasks; auto: pretrain for a pretrain run, downstream otherwise",
    )
    tasks: list[str] | None = Field(None, description="downstream tasks of the suite; null = all")
    eval_per_task: int = Field(16, ge=1, le=100_000, description="evaluation examples per task (program)")
    max_source_length: int = Field(64, ge=8, le=65536, description="source tokens kept")
    eval_batch_size: int = Field(64, ge=1, le=65536, description="examples per evaluation forward")

    @field_validator("path")
    @classmethod
    def _one_source(cls, path: str | None, info: ValidationInfo) -> str | None:
        named = [k for k in ("pretrain_run_id", "finetune_run_id") if info.data.get(k) is not None]
        if len(named) + (path is not None) > 1:
            raise ValueError("name one model: pretrain_run_id, finetune_run_id or path")
        return path

    @property
    def source_named(self) -> bool:
        return any(v is not None for v in (self.pretrain_run_id, self.finetune_run_id, self.path))


def _error(
    loc: tuple[str | int, ...], kind: str, message: str, ctx: dict[str, Any], value: Any
) -> InitErrorDetails:
    return InitErrorDetails(type=PydanticCustomError(kind, message, ctx), loc=loc, input=value)


Target = Annotated[SmoeTarget | HfTarget | ReasonFormerTarget, Field(discriminator="type")]
# the shape before the union (specs stored then): target named the type, and all three sub-configs were
# there, two of them ignored; under these keys
LEGACY_KEYS = {"smoe_sraven": "smoe", "hf": "hf", "reasonformer": "reasonformer"}


def _from_legacy(data: dict[str, Any]) -> dict[str, Any]:
    """A spec of the shape before the union -> today's: ``{"target": "hf", "hf": {...}, "smoe": {...}}``
    becomes ``{"target": {"type": "hf", ...}}``, the ignored sub-configs dropped."""
    selector = data.get("target", "smoe_sraven")
    if not isinstance(selector, str) and not any(key in data for key in LEGACY_KEYS.values()):
        return data  # today's shape
    out = {k: v for k, v in data.items() if k != "target" and k not in LEGACY_KEYS.values()}
    if not isinstance(selector, str) or selector not in LEGACY_KEYS:
        out["target"] = selector  # validation names what is wrong with it
        return out
    chosen = data.get(LEGACY_KEYS[selector])
    out["target"] = {**chosen, "type": selector} if isinstance(chosen, dict) else {"type": selector}
    return out


class TopkEvalSpec(SpecBase):
    kind: Literal["topk_eval"] = "topk_eval"
    target: Target = Field(
        default_factory=SmoeTarget,
        description="which model, by type: smoe_sraven (our SMoE on SRAVEN), hf (an HF MoE LM) or "
        "reasonformer (ReasonFormer's skill router), with that type's settings",
    )
    eval_k: list[K] | None = Field(
        None, min_length=1, max_length=1024, description="experts per token k' to evaluate; null = 1..E"
    )
    threads: int = Field(
        1, ge=1, le=256, description="CPU threads (tiny models are op-bound: a second thread mostly spins)"
    )

    @field_validator("eval_k")
    @classmethod
    def _eval_k_distinct(cls, eval_k: list[int] | None) -> list[int] | None:
        return _distinct(eval_k) if eval_k is not None else None

    @model_validator(mode="before")
    @classmethod
    def _legacy_shape(cls, data: Any) -> Any:
        return _from_legacy(data) if isinstance(data, dict) else data

    def known_experts(self) -> int | None:
        """E where the spec alone tells it (a known HF model, or the SMoEs trained in-run)."""
        target = self.target
        if isinstance(target, HfTarget):
            return KNOWN_EXPERTS.get(target.model)
        if isinstance(target, SmoeTarget) and target.trains_in_run:
            return target.demo.moe.num_experts
        return None

    @model_validator(mode="wrap")
    @classmethod
    def _k_within_experts(cls, data: Any, handler: Any) -> Any:
        """k' (and an in-run train k) above a known E names its field; a reasonformer target needs a model;
        an hf target's placement fits the run's resources."""
        spec: TopkEvalSpec = handler(data)
        errors: list[InitErrorDetails] = []
        E = spec.known_experts()
        over = "k {k} is above the model's {experts} experts (1..{experts})"
        if E is not None:
            for i, k in enumerate(spec.eval_k or []):
                if k > E:
                    errors.append(_error(("eval_k", i), "k_above_experts", over, {"k": k, "experts": E}, k))
            if isinstance(spec.target, SmoeTarget):
                for i, k in enumerate(spec.target.train_k):
                    if k > E:
                        loc = ("target", "smoe_sraven", "train_k", i)
                        errors.append(_error(loc, "k_above_experts", over, {"k": k, "experts": E}, k))
        target = spec.target
        if isinstance(target, HfTarget):
            errors += placement_errors(("target", "hf"), target.device_map, target.max_memory, spec.resources)
        if isinstance(target, ReasonFormerTarget) and not target.source_named:
            errors.append(
                _error(
                    ("target", "reasonformer", "pretrain_run_id"),
                    "missing_model",
                    "target type reasonformer needs pretrain_run_id, finetune_run_id or path",
                    {},
                    None,
                )
            )
        if errors:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        return spec


class TopkEvalPoint(StrictModel):
    """Result record ``topk_eval_point``: one (train k, eval k') cell of the matrix."""

    kind: Literal["topk_eval_point"] = "topk_eval_point"
    target: Literal["smoe_sraven", "hf", "reasonformer"]
    model: str = Field(description="what was evaluated: 'run 12', a path, a model name, 'in-run k=2'")
    family: str = Field(description="model family: smoe, reasonformer, or the HF model_type (mixtral, ...)")
    source_run_id: int | None = Field(None, description="the run the model came from, if any")
    train_k: int | None = Field(description="experts per token the model was trained at (null: unknown)")
    eval_k: int = Field(description="experts per token k' at evaluation")
    num_experts: int = Field(description="E: experts each router chooses among")
    routers: int = Field(description="routers the knob was set on")
    renormalises: bool | None = Field(
        description="the router renormalises its top-k weights to sum to 1 (null: mixed or unknown); "
        "without it, raising k also raises the total expert weight (a confound across families)"
    )
    score: str = Field(description="test_acc | perplexity | choice_accuracy | eval_average")
    value: float
    higher_is_better: bool
    ood_value: float | None = Field(None, description="SRAVEN: OOD accuracy at this k'")
    per_feature: list[float] | None = Field(None, description="SRAVEN: ID-test accuracy per query feature")
    M: int | None = Field(None, description="SRAVEN: features per panel (the task's difficulty)")
    n: int | None = Field(
        None,
        description="problems or items value is a proportion of (SRAVEN test set, choice items, ReasonFormer "
        "examples): its 95% Wilson interval; null for perplexity and in results written before it",
    )
    ood_n: int | None = Field(None, description="SRAVEN: problems ood_value is a proportion of")
    extra: dict[str, float] = Field(default_factory=dict, description="other scores at this k'")


# Mixtral-8x7B-Instruct's perplexity on WikiText-2 in bf16: the GPU examples' model, on one GPU or spread
# (the text file lies in the offline data store: <REASONLAB_CACHE>/data/wikitext-2-test.txt)
_MIXTRAL_PERPLEXITY: dict[str, object] = {
    "model": "mistralai/Mixtral-8x7B-Instruct-v0.1",
    "score": "perplexity",
    "text_path": "wikitext-2-test.txt",
    "window": 2048,
    "max_tokens": 65536,
    "batch_size": 1,
    "dtype": "bfloat16",
}

MANIFEST = KindManifest(
    name="topk_eval",
    description="Inference-time experts-per-token: a model trained at k evaluated at every k' (one knob on "
    "every router: our SMoE on SRAVEN, HF MoE LMs, ReasonFormer's skill router); the train-k x eval-k' "
    "matrix of a cheap score (SMoE paper, section 2.1).",
    spec=TopkEvalSpec,
    # a regret (how far a k falls behind the best k, worker.core.topk.best) is better low, whatever its score
    metric_directions={"*regret*": "min", "*loss*": "min", "*acc*": "max", "eval_average*": "max"},
    results=(TopkEvalPoint,),
    source_runs={
        "target.run_id": "smoe_sraven",
        "target.pretrain_run_id": "reasonformer_pretrain",
        "target.finetune_run_id": "reasonformer_finetune",
        # runs stored before the union keep the old shape (a run token reads the sources they name)
        "smoe.run_id": "smoe_sraven",
        "reasonformer.pretrain_run_id": "reasonformer_pretrain",
        "reasonformer.finetune_run_id": "reasonformer_finetune",
    },
    examples=(
        Example(
            name="tiny-in-run",
            description="two tiny SMoEs trained in-run at k = 1 and 2 (4 experts, 20 steps), each evaluated "
            "at k' = 1..4: the whole matrix in seconds (the browser test's)",
            spec={
                "target": {
                    "type": "smoe_sraven",
                    "train_k": [1, 2],
                    "eval_size": 64,
                    "demo": {
                        "model": {
                            "d_model": 16,
                            "num_layers": 1,
                            "num_heads": 2,
                            "qk_dim": 8,
                            "v_dim": 8,
                            "mlp_hidden": 16,
                        },
                        "moe": {"num_experts": 4, "expert_hidden": 16},
                        "train": {
                            "steps": 20,
                            "batch_size": 16,
                            "warmup_steps": 2,
                            "eval_interval": 20,
                            "eval_size": 64,
                            "checkpoint_every": 20,
                            "log_every": 5,
                        },
                    },
                }
            },
        ),
        Example(
            name="smoe-run",
            description="evaluate a smoe_sraven run's model at k' = 1..8 (put its run id)",
            spec={"target": {"type": "smoe_sraven", "run_id": 1}, "eval_k": [1, 2, 3, 4, 5, 6, 7, 8]},
        ),
        Example(
            name="mixtral-perplexity-gpu",
            description="Mixtral-8x7B-Instruct, perplexity of a text at k' = 1..8: about 93 GB of weights in "
            "bf16, one H200 (141 GB; two 80 GB GPUs: mixtral-perplexity-2gpu); docs/experiments/topk_eval.md",
            spec={
                "target": {"type": "hf", **_MIXTRAL_PERPLEXITY},
                "resources": {"device": "cuda", "gpus": 1},
                "eval_k": [1, 2, 3, 4, 5, 6, 7, 8],
            },
        ),
        Example(
            name="mixtral-perplexity-2gpu",
            description="the same on two 80 GB GPUs: the bf16 weights spread by device_map auto (~43.5 GiB a "
            "GPU); needs a worker that sees both GPUs",
            spec={
                "target": {"type": "hf", **_MIXTRAL_PERPLEXITY, "device_map": "auto"},
                "resources": {"device": "cuda", "gpus": 2},
                "eval_k": [1, 2, 3, 4, 5, 6, 7, 8],
            },
        ),
        Example(
            name="tiny-olmoe-choices",
            description="a tiny random OLMoE (a non-renormalising router), multiple-choice accuracy on "
            "examples/choices.jsonl of the data store (`make offline` copies the repository's there)",
            spec={
                "target": {
                    "type": "hf",
                    "model": "tiny-olmoe",
                    "score": "multiple_choice",
                    "choices_path": "examples/choices.jsonl",
                },
            },
        ),
        Example(
            name="reasonformer-pretrain-run",
            description="a reasonformer_pretrain run's skill router at k' = 1..6 (put its run id)",
            spec={"target": {"type": "reasonformer", "pretrain_run_id": 1}},
        ),
    ),
)
