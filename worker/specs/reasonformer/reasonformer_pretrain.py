"""The ``reasonformer_pretrain`` kind: reasoning-centric pre-training of ReasonFormer (paper 001, sections
3.3 and 4.2): teacher forcing plus the skill-routing loss, on instances labelled with their skill; then
the per-step routing analysis (section 5.4, Figure 3) on held-out instances. The saved model is what a
``reasonformer_finetune`` run starts from (``init.run_id``). docs/experiments/reasonformer.md.

``{}`` is a CPU demo of a few minutes: a tiny T5 (preset ``t5-tiny``, random init), the shared variant,
depth 3, top-2 of 6 skills, on the built-in synthetic compositional-skills suite. The paper's scale (T5
v1.1 base, the appendix-A corpora as JSONL) is the example ``paper-scale-gpu``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from worker.specs.base import SpecBase, StrictModel
from worker.specs.confine import DataPath, ModelName
from worker.specs.manifest import Example, KindManifest
from worker.specs.reasonformer.common.analysis import AnalysisSpec
from worker.specs.reasonformer.common.model import ModelSpec, check_skills_against_data
from worker.specs.reasonformer.common.results import ReasonFormerEval, Routing
from worker.specs.reasonformer.common.training import TrainSpec
from worker.specs.suite import SuiteSpec

PRESETS = ("t5-tiny", "t5-mini", "t5-v1_1-small", "t5-v1_1-base", "t5-v1_1-large")  # worker/core/reasonformer


class PretrainData(StrictModel):
    source: Literal["synthetic", "jsonl"] = Field(
        "synthetic",
        description="synthetic: the built-in suite; jsonl: {skill, input, output} lines (appendix A)",
    )
    path: DataPath | None = Field(
        None,
        max_length=1000,
        validate_default=True,
        description="jsonl: the pre-training file in the data store, relative to it",
    )
    eval_path: DataPath | None = Field(
        None, max_length=1000, description="jsonl: a held-out file in the data store; null = eval_fraction"
    )
    eval_fraction: float = Field(
        0.02, gt=0.0, lt=1.0, description="jsonl without eval_path: held-out fraction"
    )
    eval_per_task: int = Field(32, ge=1, le=100_000, description="evaluation instances per task (synthetic)")
    eval_limit: int = Field(2000, ge=1, le=10_000_000, description="at most this many evaluation instances")
    suite: SuiteSpec = Field(default_factory=SuiteSpec)
    max_source_length: int = Field(512, ge=8, le=65536, description="input tokens kept (T5: 512)")
    max_target_length: int = Field(128, ge=2, le=65536, description="target tokens kept")
    tokenizer: ModelName | None = Field(
        None,
        max_length=500,
        description="jsonl: a tokenizer folder of the model store (relative to it) or a hub id; null = the "
        "backbone's",
    )

    @field_validator("path")
    @classmethod
    def _jsonl_needs_a_path(cls, path: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("source") == "jsonl" and not path:
            raise ValueError("source jsonl needs a path")
        return path


class ReasonFormerPretrainSpec(SpecBase):
    kind: Literal["reasonformer_pretrain"] = "reasonformer_pretrain"
    data: PretrainData = Field(default_factory=PretrainData)
    model: ModelSpec = Field(default_factory=ModelSpec, validate_default=True)  # checked against the data
    train: TrainSpec = Field(default_factory=TrainSpec)
    analysis: AnalysisSpec = Field(default_factory=AnalysisSpec)

    @field_validator("model")
    @classmethod
    def _skills_of_the_data(cls, model: ModelSpec, info: ValidationInfo) -> ModelSpec:
        data = info.data.get("data")
        if data is None:
            return model
        if data.source != "synthetic" and model.backbone in PRESETS and data.tokenizer is None:
            raise ValueError(f"a preset backbone ({model.backbone}) on text data needs data.tokenizer")
        return check_skills_against_data(model, data.source)


_PAPER_MODEL = {
    "variant": "shared",
    "backbone": "google/t5-v1_1-base",
    "skills": ["logic", "qa", "ner", "nli", "fact", "general"],
    "depth": 3,
    "representation_layers": 9,
    "module_layers": 3,
    "top_k": 2,
    "adapter_bottleneck": 256,
    "router_hidden": 256,
}

MANIFEST = KindManifest(
    name="reasonformer_pretrain",
    description="ReasonFormer reasoning-centric pre-training (paper 001): representation module + skill "
    "reasoning modules with a per-step skill router and stop gate, trained with teacher forcing and the "
    "skill-routing loss; reports exact match per skill and the per-step routing of every task (Figure 3).",
    spec=ReasonFormerPretrainSpec,
    metric_directions={"*loss*": "min", "*acc*": "max", "step_time": "min"},
    results=(ReasonFormerEval, Routing),
    examples=(
        Example(
            name="cpu-variants-sweep",
            description="the CPU demo sweep: shared / private / single / MoRM, sparse (top-2) and full, on the "
            "synthetic suite (8 runs of a few minutes; examples/reasonformer_cpu_sweep.yaml)",
            spec={"train": {"steps": 600}},
            sweep={
                "grid": {"model.variant": ["shared", "private", "single", "morm"], "model.top_k": [2, None]}
            },
        ),
        Example(
            name="tiny-shared-private",
            description="seconds: 20 steps of the shared and the private variant (the browser test's experiment)",
            spec={"data": {"eval_per_task": 2}, "train": {"steps": 20, "batch_size": 16}},
            sweep={"grid": {"model.variant": ["shared", "private"]}},
        ),
        Example(
            name="paper-scale-gpu",
            description="the paper's pre-training (appendix B): T5 v1.1 base, 5 x ~1M appendix-A instances "
            "as JSONL, lr 5e-5, warmup 0.1, batch 72, 5 epochs; one GPU per run here, the paper used 8 V100 (examples/reasonformer_pretrain_gpu.yaml)",
            spec={
                "seed": 0,
                "resources": {"device": "cuda", "gpus": 1},
                "data": {
                    "source": "jsonl",
                    "path": "reasonformer/pretrain.jsonl",
                    "eval_fraction": 0.002,
                    "max_source_length": 512,
                    "max_target_length": 128,
                },
                "model": _PAPER_MODEL,
                "train": {
                    "batch_size": 72,
                    "steps": 347222,
                    "lr": 5e-5,
                    "warmup_ratio": 0.1,
                    "weight_decay": 0.0,
                    "grad_clip": 1.0,
                    "eval_interval": 20000,
                    "checkpoint_every": 5000,
                    "log_every": 100,
                    "eval_batch_size": 64,
                    "bf16": True,
                    "compile": False,
                },
            },
        ),
    ),
)
