"""The ``reasonformer_finetune`` kind: downstream adaptation of ReasonFormer or a baseline (paper 001,
sections 3.3, 5.1-5.4): initialised from a ``reasonformer_pretrain`` run (``init.run_id``: its saved model
and tokenizer, architecture included), pre-trained inside the run first on the synthetic suite or jsonl
text (``init.pretrain``: the pre-training kind's trainer, so one experiment holds pre-trained and fresh
arms) or fresh from the backbone (Table 2's "w/o pre-train"), optionally few-shot (section 5.3) with
frozen modules (Table 3), trained with teacher forcing only; evaluated by option log-likelihood (multiple
choice) or exact match (generative), with the per-step routing analysis. docs/experiments/reasonformer.md.

``{}`` is a CPU demo: a fresh tiny shared ReasonFormer fine-tuned on the synthetic suite's held-out
compositions (``compose2``, ``compose3``, ``choose2``). The paper's 11 datasets are the example
``paper-scale-gpu``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from worker.specs.base import SpecBase, StrictModel
from worker.specs.confine import DataPath, ModelFolder, ModelName
from worker.specs.manifest import Example, KindManifest
from worker.specs.reasonformer.common.analysis import AnalysisSpec
from worker.specs.reasonformer.common.model import ModelSpec, check_skills_against_data, error_below
from worker.specs.reasonformer.common.results import ReasonFormerEval, Routing
from worker.specs.reasonformer.common.training import TrainSpec
from worker.specs.reasonformer.reasonformer_pretrain import PRESETS, PretrainData
from worker.specs.suite import SuiteSpec

SYNTHETIC_TASKS = ("compose2", "compose3", "choose2")
HUB_TASKS = (
    "reclor",
    "arc",
    "csqa",
    "race",
    "dream",
    "anli",
    "mutual",
    "wikihop",
    "hotpotqa",
    "hellaswag",
    "piqa",
)


class InRunPretrain(StrictModel):
    """Reasoning-centric pre-training inside the fine-tuning run, before its adaptation.

    What a ``reasonformer_pretrain`` spec says (its ``data``, ``model`` and ``train`` blocks), run with that
    kind's corpus, trainer (teacher forcing plus the skill-routing loss, section 3.3) and evaluation, with this
    run's seed; its metrics are logged under ``pretrain/`` (``pretrain/eval/average``,
    ``pretrain/routing/skill_match``, ...). The model adapted is the one it trains (its ``model`` block, as
    a source run's), with its tokenizer. One experiment can so hold pre-trained and fresh arms (Table 2's
    "w/o pre-train") without naming a pre-training run's id."""

    data: PretrainData = Field(
        default_factory=PretrainData,
        description="the pre-training data: the synthetic suite (the same as data.suite) or jsonl",
    )
    model: ModelSpec = Field(
        default_factory=ModelSpec, validate_default=True, description="the model pre-trained, then adapted"
    )
    train: TrainSpec = Field(default_factory=TrainSpec, description="the pre-training's optimiser and steps")

    @field_validator("model")
    @classmethod
    def _skills_of_the_data(cls, model: ModelSpec, info: ValidationInfo) -> ModelSpec:
        data = info.data.get("data")
        if data is None:
            return model
        if data.source != "synthetic" and model.backbone in PRESETS and data.tokenizer is None:
            raise ValueError(f"a preset backbone ({model.backbone}) on text data needs data.tokenizer")
        return check_skills_against_data(model, data.source)


class InitSpec(StrictModel):
    run_id: int | None = Field(
        None, ge=1, description="a succeeded reasonformer_pretrain run to start from; null = fresh (model)"
    )
    path: ModelFolder | None = Field(
        None,
        max_length=1000,
        description="or a saved model folder (a run's outputs/model, copied into the model store) relative "
        "to the model store; null = none",
    )
    pretrain: InRunPretrain | None = Field(
        None,
        description="or pre-train a fresh model in this run first, on the synthetic suite or jsonl (its "
        "model block is the model, not the spec's); null = none",
    )

    @field_validator("path")
    @classmethod
    def _one_source(cls, path: str | None, info: ValidationInfo) -> str | None:
        if path is not None and info.data.get("run_id") is not None:
            raise ValueError("give init.run_id or init.path, not both")
        return path

    @field_validator("pretrain")
    @classmethod
    def _pretrain_is_a_source(
        cls, pretrain: InRunPretrain | None, info: ValidationInfo
    ) -> InRunPretrain | None:
        if pretrain is not None and (
            info.data.get("run_id") is not None or info.data.get("path") is not None
        ):
            raise ValueError(
                "init.pretrain starts from a fresh model: give it without init.run_id and init.path"
            )
        return pretrain

    def fresh(self) -> bool:
        """No saved model is named (run_id, path): the run builds its model (pre-training it first when
        ``pretrain`` is given)."""
        return self.run_id is None and self.path is None


class FewShot(StrictModel):
    count: int | None = Field(None, ge=1, le=10_000_000, description="training examples kept per task")
    fraction: float | None = Field(
        None, gt=0.0, le=1.0, validate_default=True, description="or this fraction of each task's examples"
    )
    seed: int = Field(0, ge=0, le=2**32 - 1, description="seed of the subset (the same for every variant)")

    @field_validator("fraction")
    @classmethod
    def _one_of(cls, fraction: float | None, info: ValidationInfo) -> float | None:
        if (fraction is None) == (info.data.get("count") is None):
            raise ValueError("few_shot needs exactly one of count and fraction")
        return fraction


class FinetuneData(StrictModel):
    source: Literal["synthetic", "jsonl", "hub"] = Field(
        "synthetic",
        description="synthetic: the suite's held-out compositions; jsonl: {context, question, options, "
        "answer} or {input, output} files; hub: the paper's datasets through HF datasets",
    )
    tasks: list[str] | None = Field(
        None, min_length=1, max_length=64, description="synthetic or hub tasks; null = all of the source"
    )
    train_path: DataPath | None = Field(
        None, max_length=1000, description="jsonl: training file in the data store, relative to it"
    )
    eval_path: DataPath | None = Field(
        None,
        max_length=1000,
        validate_default=True,
        description="jsonl: evaluation file in the data store, relative to it",
    )
    train_per_task: int = Field(
        400, ge=1, le=10_000_000, description="synthetic: training instances per task"
    )
    eval_per_task: int = Field(
        100, ge=1, le=10_000_000, description="synthetic: evaluation instances per task"
    )
    hub_limit: int | None = Field(None, ge=1, description="hub: at most this many rows per task and split")
    suite: SuiteSpec = Field(default_factory=SuiteSpec)
    few_shot: FewShot | None = Field(None, description="few-shot subsampling of the training set (5.3)")
    max_source_length: int = Field(512, ge=8, le=65536)
    max_target_length: int = Field(128, ge=2, le=65536)
    tokenizer: ModelName | None = Field(
        None,
        max_length=500,
        description="text data on a fresh preset: a tokenizer (a model-store folder or a hub id)",
    )

    @field_validator("tasks")
    @classmethod
    def _known_tasks(cls, tasks: list[str] | None, info: ValidationInfo) -> list[str] | None:
        known = {"synthetic": SYNTHETIC_TASKS, "hub": HUB_TASKS}.get(info.data.get("source") or "")
        if tasks is not None and known is not None:
            unknown = [t for t in tasks if t not in known]
            if unknown:
                raise ValueError(f"unknown tasks {unknown}; known: {', '.join(known)}")
        return tasks

    @field_validator("eval_path")
    @classmethod
    def _jsonl_paths(cls, eval_path: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("source") == "jsonl" and (not eval_path or not info.data.get("train_path")):
            raise ValueError("source jsonl needs train_path and eval_path")
        return eval_path


class ReasonFormerFinetuneSpec(SpecBase):
    kind: Literal["reasonformer_finetune"] = "reasonformer_finetune"
    init: InitSpec = Field(default_factory=InitSpec)
    data: FinetuneData = Field(default_factory=FinetuneData, validate_default=True)
    model: ModelSpec = Field(
        default_factory=ModelSpec,
        validate_default=True,
        description="the model of a fresh start (init empty); a source run's model keeps its own architecture, "
        "and init.pretrain's model block is the one it pre-trains",
    )
    freeze: Literal["none", "representation", "reasoning", "both"] = Field(
        "none", description="frozen during adaptation (Table 3): reasoning modules, representation, both"
    )
    train: TrainSpec = Field(default_factory=TrainSpec)
    analysis: AnalysisSpec = Field(default_factory=AnalysisSpec)

    @field_validator("data")
    @classmethod
    def _pretrain_on_the_same_text(cls, data: FinetuneData, info: ValidationInfo) -> FinetuneData:
        """An in-run pre-training and the adaptation share a tokenizer: both on the synthetic suite (the
        same one: its held-out programs are the downstream tasks), or both on text."""
        init = info.data.get("init")
        pre = init.pretrain.data if init is not None and init.pretrain is not None else None
        if pre is None:
            return data
        if (pre.source == "synthetic") != (data.source == "synthetic"):
            raise error_below(
                ("source",),
                "pretrain_data_mismatch",
                f"init.pretrain pre-trains on {pre.source} data and this adapts on {data.source}: pre-train on "
                "the synthetic suite to adapt on it, on jsonl text to adapt on jsonl or hub data",
                data.source,
            )
        if pre.source == "synthetic" and pre.suite != data.suite:
            raise error_below(
                ("suite",),
                "pretrain_suite_mismatch",
                "init.pretrain.data.suite differs from data.suite: the pre-training and the adaptation use one "
                "suite (its held-out programs are the downstream tasks); give both the same",
                data.suite.model_dump(),
            )
        return data

    @field_validator("model")
    @classmethod
    def _skills_of_the_data(cls, model: ModelSpec, info: ValidationInfo) -> ModelSpec:
        data, init = info.data.get("data"), info.data.get("init")
        if data is None or init is None or not init.fresh() or init.pretrain is not None:
            return model
        if data.source != "synthetic" and model.backbone in PRESETS and data.tokenizer is None:
            raise ValueError(f"a preset backbone ({model.backbone}) on text data needs data.tokenizer")
        return check_skills_against_data(model, data.source)

    @field_validator("freeze")
    @classmethod
    def _something_to_freeze(cls, freeze: str, info: ValidationInfo) -> str:
        model, init = info.data.get("model"), info.data.get("init")
        if init is not None and init.pretrain is not None:
            model = init.pretrain.model
        fresh = init is not None and init.fresh()
        if freeze != "none" and fresh and model is not None and model.variant == "t5":
            raise ValueError("plain T5 has no representation or reasoning modules to freeze")
        return freeze

    def built_model(self) -> ModelSpec:
        """The model a fresh start builds: the in-run pre-training's, else ``model``."""
        return self.init.pretrain.model if self.init.pretrain is not None else self.model


_PAPER_TRAIN = {
    "batch_size": 48,
    "steps": 30000,
    "lr": 1e-4,
    "warmup_ratio": 0.1,
    "weight_decay": 0.0,
    "grad_clip": 1.0,
    "eval_interval": 3000,
    "checkpoint_every": 3000,
    "log_every": 100,
    "eval_batch_size": 32,
    "max_new_tokens": 32,
    "bf16": True,
}

MANIFEST = KindManifest(
    name="reasonformer_finetune",
    description="ReasonFormer downstream adaptation (paper 001): from a reasonformer_pretrain run or fresh, "
    "optionally few-shot with frozen modules; multiple choice by option log-likelihood, exact match for "
    "generation; Table 1-3 scores and the per-step routing analysis (Figure 3).",
    spec=ReasonFormerFinetuneSpec,
    metric_directions={"*loss*": "min", "*acc*": "max", "step_time": "min"},
    results=(ReasonFormerEval, Routing),
    source_runs={"init.run_id": "reasonformer_pretrain"},
    examples=(
        Example(
            name="cpu-ablation-fresh",
            description="Table 2's switches on the synthetic suite from fresh models (no pre-training run "
            "needed): shared vs single, adapters on/off (examples/reasonformer_finetune_ablation.yaml)",
            spec={"train": {"steps": 400}},
            sweep={"grid": {"model.variant": ["shared", "single"], "model.adapter_bottleneck": [32, None]}},
        ),
        Example(
            name="tiny-adapter-ablation",
            description="seconds: 10 steps, fresh shared with and without adapters (the browser test's)",
            spec={
                "data": {"train_per_task": 16, "eval_per_task": 4},
                "train": {"steps": 10, "batch_size": 16},
            },
            sweep={"grid": {"model.adapter_bottleneck": [32, None]}},
        ),
        Example(
            name="few-shot-frozen",
            description="Table 3's layout: 16 examples per task, freezing nothing, the reasoning modules, the "
            "representation or both (set init.run_id to a pre-training run)",
            spec={"data": {"few_shot": {"count": 16, "seed": 0}}, "train": {"steps": 200, "lr": 1e-3}},
            sweep={"grid": {"freeze": ["none", "reasoning", "representation", "both"]}},
        ),
        Example(
            name="paper-scale-gpu",
            description="the paper's adaptation (appendix B): the 11 datasets through HF datasets, lr 1e-4, "
            "batch 48, one multi-task run per model (set init.run_id; examples/reasonformer_finetune_gpu.yaml)",
            spec={
                "seed": 0,
                "resources": {"device": "cuda", "gpus": 1},
                "data": {"source": "hub", "tasks": list(HUB_TASKS), "max_source_length": 512},
                "model": {
                    "variant": "shared",
                    "backbone": "google/t5-v1_1-base",
                    "skills": ["logic", "qa", "ner", "nli", "fact", "general"],
                    "depth": 3,
                    "representation_layers": 9,
                    "module_layers": 3,
                    "top_k": 2,
                    "adapter_bottleneck": 256,
                    "router_hidden": 256,
                },
                "train": _PAPER_TRAIN,
            },
        ),
    ),
)
