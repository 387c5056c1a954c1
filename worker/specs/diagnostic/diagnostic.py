"""The ``diagnostic`` kind: the platform's self-test (not a research kind).

A small MLP regresses a generated problem; it logs a loss curve, checkpoints every
``checkpoint_every`` steps and resumes exactly after a crash.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from worker.specs.base import SpecBase, StrictModel
from worker.specs.manifest import Example, KindManifest


class DiagnosticData(StrictModel):
    n_samples: int = Field(512, ge=8, le=1_000_000, description="size of the generated regression set")
    n_features: int = Field(8, ge=1, le=4096)
    noise: float = Field(0.05, ge=0.0, le=10.0, description="std of the gaussian label noise")


class DiagnosticModel(StrictModel):
    hidden: int = Field(32, ge=1, le=65536)
    layers: int = Field(2, ge=1, le=64)


class DiagnosticTrain(StrictModel):
    steps: int = Field(200, ge=1, le=10_000_000)
    batch_size: int = Field(64, ge=1, le=1_000_000)
    lr: float = Field(1e-2, gt=0.0, le=10.0)
    checkpoint_every: int = Field(50, ge=1, description="steps between checkpoints")
    log_every: int = Field(1, ge=1, description="steps between metric points")
    step_delay: float = Field(
        0.0, ge=0.0, le=60.0, description="seconds to sleep per step (lets tests and demos watch a run live)"
    )
    fail_at_step: int | None = Field(
        None, ge=1, description="raise an error at this step (tests the failure path)"
    )


class DiagnosticSpec(SpecBase):
    kind: Literal["diagnostic"] = "diagnostic"
    data: DiagnosticData = Field(default_factory=DiagnosticData)
    model: DiagnosticModel = Field(default_factory=DiagnosticModel)
    train: DiagnosticTrain = Field(default_factory=DiagnosticTrain)

    # Cross-field checks are field validators on the later field, so the error's location names it
    # (``train``), not the whole spec.
    @field_validator("train")
    @classmethod
    def _batch_fits(cls, train: DiagnosticTrain, info: ValidationInfo) -> DiagnosticTrain:
        data = info.data.get("data")
        if data is not None and train.batch_size > data.n_samples:
            raise ValueError(f"batch_size ({train.batch_size}) exceeds data.n_samples ({data.n_samples})")
        return train


class DiagnosticResult(StrictModel):
    """Result record ``diagnostic``: how the self-test ended."""

    kind: Literal["diagnostic"] = "diagnostic"
    final_loss: float
    initial_loss: float
    steps: int
    resumed_from_step: int | None = None
    parameters: int


MANIFEST = KindManifest(
    name="diagnostic",
    description="The platform's self-test: a small MLP regression that logs a loss curve, "
    "checkpoints and resumes exactly. Not a research kind.",
    spec=DiagnosticSpec,
    metric_directions={"*loss*": "min"},
    result_fields={"final_loss": "diagnostic.final_loss", "initial_loss": "diagnostic.initial_loss"},
    results=(DiagnosticResult,),
    examples=(
        Example(
            name="self-test",
            description="the self-test of examples/diagnostic.yaml: 200 steps, checkpoints every 50",
            spec={"seed": 0, "train": {"steps": 200, "lr": 0.01, "checkpoint_every": 50}},
        ),
        Example(
            name="seed-sweep",
            description="three seeds of the default self-test (examples/diagnostic.yaml with a seed grid)",
            spec={"seed": 0, "train": {"steps": 200, "lr": 0.01, "checkpoint_every": 50}},
            sweep={"grid": {"seed": [1, 2, 3]}},
        ),
        Example(
            name="watch-live",
            description="a slow run (0.2 s per step) to watch progress, metrics and cancel live",
            spec={"train": {"steps": 300, "step_delay": 0.2}},
        ),
    ),
)
