"""The base every experiment spec derives from.

Every field of every spec has a default, so ``{}`` is a valid spec of any kind and runs a small
CPU-sized experiment. Specs forbid unknown fields so a typo is a 422, not a silently ignored setting.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# the rows a per-example table of one run holds at most (idx 0 to MAX_EXAMPLE_ROWS - 1): the size its
# Examples tab, filters and diffs are measured at (docs/benchmarks.md, Per-example tables). The API refuses
# a row past it (backend/examples/schemas.py), ctx.log_examples keeps the first rows up to it and logs how
# many it did not keep, and a spec known to log more is a 422 at submission (topk_eval: target.max_tokens /
# target.window perplexity windows)
MAX_EXAMPLE_ROWS = 1_000_000


class StrictModel(BaseModel):
    """A pydantic model that refuses unknown fields (a typo in a spec must be an error)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Resources(StrictModel):
    """Where a run wants to execute. ``gpus > 0`` sends it to the ``gpu`` queue, else to ``cpu``."""

    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto", description="auto = cuda when the worker has one, else cpu"
    )
    gpus: int = Field(0, ge=0, le=64, description="GPUs the run needs; > 0 routes it to the gpu queue")
    priority: Literal["low", "normal", "high"] = Field(
        "normal",
        description="a free worker takes the queued run of the highest priority first, the oldest first "
        "within a priority; high for short and interactive runs (a quick check, a sweep of seconds-long "
        "runs), low for long ones that may wait (paper-scale training). It never stops a running run",
    )

    @property
    def queue(self) -> str:
        return "gpu" if self.gpus > 0 else "cpu"


class SpecBase(StrictModel):
    """Fields every kind's spec has."""

    seed: int = Field(0, ge=0, le=2**32 - 1, description="seed of every random stream of the run")
    resources: Resources = Field(default_factory=Resources)
