"""The ``train`` block of both ReasonFormer specs: optimiser, schedule, evaluation, checkpoints, device."""

from __future__ import annotations

from pydantic import Field

from worker.specs.base import StrictModel


class TrainSpec(StrictModel):
    batch_size: int = Field(
        32, ge=1, le=65536, description="examples per step (paper, pre-training: 72 shared)"
    )
    steps: int = Field(600, ge=1, le=100_000_000, description="optimiser updates")
    lr: float = Field(
        3e-3, gt=0.0, le=10.0, description="AdamW peak learning rate (paper: 5e-5 pre-training)"
    )
    warmup_ratio: float = Field(
        0.1, ge=0.0, le=1.0, description="linear warmup fraction of steps (paper: 0.1)"
    )
    final_lr_fraction: float = Field(0.0, ge=0.0, le=1.0, description="cosine decay to this fraction of lr")
    weight_decay: float = Field(0.01, ge=0.0, le=10.0, description="AdamW weight decay (not on norms/biases)")
    grad_clip: float | None = Field(1.0, gt=0.0, description="max global gradient norm; null = none")
    eval_interval: int = Field(0, ge=0, description="steps between evaluations; 0 = at the end only")
    checkpoint_every: int = Field(200, ge=0, description="steps between checkpoints; 0 = at the end only")
    log_every: int = Field(10, ge=1, description="steps between training-metric points")
    eval_batch_size: int = Field(64, ge=1, le=65536, description="examples per evaluation forward")
    max_new_tokens: int = Field(16, ge=1, le=4096, description="greedy decoding length for generative tasks")
    threads: int | None = Field(
        1,
        ge=1,
        le=256,
        description="torch intra-op threads on CPU; 1: tiny models are op-bound and a second thread mostly "
        "waits (and spins on a shared machine); null = torch's default",
    )
    bf16: bool = Field(False, description="bf16 autocast (CUDA only; ignored on CPU)")
    compile: bool = Field(False, description="torch.compile (CUDA only; ignored on CPU)")
