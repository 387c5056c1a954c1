"""The ``smoe_sraven`` kind: a (sparse mixture-of-experts) transformer trained on SRAVEN, the top-k
against difficulty study of the SMoE paper (004, section 2.1, appendix A.2; docs/experiments/smoe_sraven.md).

``{}`` runs a CPU-sized demo in a few minutes: the reference architecture, M = 2, 8 experts top-2, 300
steps (the former 1,000-step default is the example ``cpu-1000-steps``). Paper-scale settings are in examples/sraven_topk_sweep_gpu.yaml.
"""

from __future__ import annotations

from math import comb
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from worker.specs.base import SpecBase, StrictModel
from worker.specs.manifest import Example, KindManifest


class SravenData(StrictModel):
    num_features: int = Field(
        2, ge=1, le=8, description="M: number of features (one rule each) per panel; the task's difficulty"
    )
    ood_fraction: float = Field(
        0.25,
        ge=0.0,
        le=1.0,
        description="fraction of latent tasks (multisets of M rules) held out as OOD (paper: 0.25)",
    )
    permute_features: bool = Field(
        True, description="each column of the grid gets its own feature permutation (reference: on)"
    )
    split_seed: int = Field(
        2024,
        ge=0,
        le=2**32 - 1,
        description="seed of the fixed OOD hold-out of latent tasks (not the run seed)",
    )
    train_seed: int | None = Field(
        None, ge=0, le=2**32 - 1, description="seed of the training stream; null = the run's seed"
    )
    test_seed: int = Field(1, ge=0, le=2**32 - 1, description="seed of the in-distribution test set")
    ood_seed: int = Field(2, ge=0, le=2**32 - 1, description="seed of the OOD set")
    holdout_buckets: int = Field(
        16,
        ge=2,
        le=1024,
        description="1/holdout_buckets of problem instances (by hash) are reserved for evaluation, "
        "so test and OOD problems never occur in training",
    )

    # The later field carries the cross-field check, so a 422 names ``data.ood_fraction``.
    @field_validator("ood_fraction")
    @classmethod
    def _leaves_training_tasks(cls, ood_fraction: float, info: ValidationInfo) -> float:
        M = info.data.get("num_features")
        if M is None:
            return ood_fraction
        count = comb(8 + M - 1, M)  # multisets of M out of 8 rules
        num_ood = int(ood_fraction * count)
        if num_ood >= count:
            raise ValueError(f"ood_fraction {ood_fraction} holds out all {count} latent tasks at M={M}")
        if ood_fraction > 0 and num_ood == 0:
            raise ValueError(f"ood_fraction {ood_fraction} holds out no latent task of {count} at M={M}")
        return ood_fraction


class SravenModel(StrictModel):
    attention: Literal["softmax", "hyla"] = Field(
        "softmax", description="softmax attention or HYLA (paper figures 1-3 vs 4-5)"
    )
    d_model: int = Field(128, ge=8, le=8192, description="embedding width (reference: 128)")
    num_layers: int = Field(4, ge=1, le=64, description="transformer blocks (reference: 4)")
    num_heads: int = Field(16, ge=1, le=256, description="attention heads (reference: 16)")
    qk_dim: int = Field(64, ge=1, le=8192, description="query/key width summed over heads (reference: 64)")
    v_dim: int = Field(
        64, ge=1, le=8192, validate_default=True, description="value width summed over heads (reference: 64)"
    )
    mlp_hidden: int = Field(
        256, ge=1, le=65536, description="dense FFN width when moe is null (reference: 256)"
    )
    rel_bidirectional: bool = Field(
        True, description="separate relative-position buckets for both directions (no causal mask)"
    )

    @field_validator("v_dim")
    @classmethod
    def _heads_divide(cls, v_dim: int, info: ValidationInfo) -> int:
        heads, qk = info.data.get("num_heads"), info.data.get("qk_dim")
        if heads is not None and qk is not None and (qk % heads or v_dim % heads):
            raise ValueError(f"qk_dim ({qk}) and v_dim ({v_dim}) must be multiples of num_heads ({heads})")
        return v_dim


class SravenMoE(StrictModel):
    num_experts: int = Field(8, ge=1, le=256, description="E: experts per FFN (paper: 8)")
    top_k: int = Field(2, ge=1, le=256, description="k: experts activated per token (paper sweeps 1..8)")
    expert_hidden: int = Field(256, ge=1, le=65536, description="hidden width of each expert's 2-layer MLP")
    load_balance_coef: float = Field(
        0.0, ge=0.0, le=100.0, description="Switch load-balancing loss weight (paper: none)"
    )
    router_noise: float = Field(0.0, ge=0.0, le=100.0, description="std of router-logit noise in training")

    @field_validator("top_k")
    @classmethod
    def _top_k_fits(cls, top_k: int, info: ValidationInfo) -> int:
        num_experts = info.data.get("num_experts")
        if num_experts is not None and top_k > num_experts:
            raise ValueError(f"top_k ({top_k}) exceeds num_experts ({num_experts})")
        return top_k


class SravenTrain(StrictModel):
    batch_size: int = Field(128, ge=1, le=65536, description="problems per step (reference: 128)")
    steps: int = Field(
        300, ge=1, le=100_000_000, description="optimiser updates (the CPU demo default; paper: 156,250)"
    )
    lr: float = Field(1e-3, gt=0.0, le=10.0, description="AdamW peak learning rate (reference: 1e-3)")
    warmup_steps: int = Field(50, ge=0, le=100_000_000, description="linear warmup, then cosine to 0.1*lr")
    weight_decay: float = Field(0.1, ge=0.0, le=10.0, description="AdamW weight decay, off for 1-D params")
    grad_clip: float | None = Field(None, gt=0.0, description="max global gradient norm; null = none")
    eval_interval: int = Field(100, ge=1, description="steps between ID-test/OOD evaluations")
    eval_size: int = Field(
        1024, ge=1, le=1_000_000, description="problems in the ID-test set and the OOD set"
    )
    eval_batch_size: int = Field(1024, ge=1, le=1_000_000, description="problems per evaluation forward")
    checkpoint_every: int = Field(100, ge=1, description="steps between checkpoints")
    log_every: int = Field(10, ge=1, description="steps between training-metric points")
    bf16: bool = Field(False, description="bf16 autocast (CUDA only; ignored on CPU)")
    compile: bool = Field(False, description="torch.compile the model (CUDA only; ignored on CPU)")


class SmoeSravenSpec(SpecBase):
    kind: Literal["smoe_sraven"] = "smoe_sraven"
    data: SravenData = Field(default_factory=SravenData)
    model: SravenModel = Field(default_factory=SravenModel)
    moe: SravenMoE | None = Field(
        default_factory=SravenMoE, description="sparse mixture-of-experts FFN; null = dense FFN"
    )
    train: SravenTrain = Field(default_factory=SravenTrain)


class SravenCell(StrictModel):
    """Result record ``sraven_cell``: one cell of the (M x top-k x attention) grid."""

    kind: Literal["sraven_cell"] = "sraven_cell"
    M: int = Field(description="number of features (rules) per panel")
    top_k: int | None = Field(description="experts per token; null for a dense FFN")
    num_experts: int | None = Field(description="experts per FFN; null for a dense FFN")
    attention: Literal["softmax", "hyla"]
    test_acc: float = Field(description="in-distribution test accuracy: all M query features right")
    ood_acc: float | None = Field(description="OOD accuracy (held-out rule combinations); null without OOD")
    per_feature_acc: list[float] = Field(description="ID-test accuracy per query feature slot")
    ood_per_feature_acc: list[float] | None = None
    steps: int
    test_size: int | None = Field(
        None,
        description="problems test_acc is a proportion of (its 95% Wilson interval); null before it was recorded",
    )
    ood_size: int | None = Field(None, description="problems ood_acc is a proportion of; null without OOD")


_GRID = {"moe.top_k": [1, 2, 4, 8], "data.num_features": [2, 4, 6], "model.attention": ["softmax", "hyla"]}

MANIFEST = KindManifest(
    name="smoe_sraven",
    description="A transformer with a sparse mixture-of-experts FFN (top-k of E experts) trained on "
    "SRAVEN; ID-test and OOD accuracy by M (rules per panel), top-k and attention (SMoE paper, section 2.1).",
    spec=SmoeSravenSpec,
    metric_directions={"*loss*": "min", "*acc*": "max", "step_time": "min"},
    result_fields={"test_acc": "sraven_cell.test_acc", "ood_acc": "sraven_cell.ood_acc"},
    results=(SravenCell,),
    examples=(
        Example(
            name="cpu-1000-steps",
            description="one cell at the former default: M = 2, top-2 of 8, 1,000 steps (about 10 minutes "
            "on 2 quiet cores)",
            spec={
                "train": {"steps": 1000, "warmup_steps": 100, "eval_interval": 250, "checkpoint_every": 250}
            },
        ),
        Example(
            name="cpu-topk-sweep",
            description="top-k x M x attention, 24 runs of 1,000 steps (examples/sraven_topk_sweep.yaml)",
            spec={
                "seed": 0,
                "data": {"ood_fraction": 0.25, "permute_features": True},
                "moe": {"num_experts": 8, "expert_hidden": 256},
                "train": {
                    "batch_size": 128,
                    "steps": 1000,
                    "lr": 0.001,
                    "warmup_steps": 100,
                    "eval_interval": 250,
                    "eval_size": 1024,
                },
            },
            sweep={"grid": _GRID},
        ),
        Example(
            name="paper-scale-gpu",
            description="the reference's scale, one GPU per run: 20M problems per cell, 24 runs "
            "(examples/sraven_topk_sweep_gpu.yaml)",
            spec={
                "seed": 2024,
                "resources": {"device": "cuda", "gpus": 1},
                "data": {"ood_fraction": 0.25, "permute_features": True},
                "model": {"d_model": 128, "num_layers": 4, "num_heads": 16, "qk_dim": 64, "v_dim": 64},
                "moe": {"num_experts": 8, "expert_hidden": 256, "load_balance_coef": 0.0},
                "train": {
                    "batch_size": 128,
                    "steps": 156250,
                    "lr": 0.001,
                    "warmup_steps": 1000,
                    "weight_decay": 0.1,
                    "eval_interval": 5000,
                    "eval_size": 51200,
                    "eval_batch_size": 4096,
                    "checkpoint_every": 5000,
                    "log_every": 100,
                    "bf16": False,
                    "compile": True,
                },
            },
            sweep={"grid": _GRID},
        ),
    ),
)
