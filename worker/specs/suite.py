"""The synthetic compositional-skills suite's spec: shared by the reasonformer family (its data) and
``topk_eval`` (the suite a ReasonFormer router is scored on), so it lives here, beside the other helpers,
and no kind family imports another's. Not a kind."""

from __future__ import annotations

from pydantic import Field, ValidationInfo, field_validator

from worker.specs.base import StrictModel


class SuiteSpec(StrictModel):
    """The synthetic compositional-skills suite (worker/core/reasonformer/data/synthetic.py)."""

    min_len: int = Field(3, ge=1, le=12, description="shortest digit sequence")
    max_len: int = Field(5, ge=1, le=12, description="longest digit sequence")
    heldout_fraction: float = Field(
        0.3, gt=0.0, lt=1.0, description="fraction of composite programs never seen in pre-training"
    )
    split_seed: int = Field(
        0, ge=0, le=2**32 - 1, description="seed of the held-out programs (not the run seed)"
    )
    primitive_fraction: float = Field(
        0.5, gt=0.0, le=1.0, description="fraction of pre-training instances that are single skills"
    )

    @field_validator("max_len")
    @classmethod
    def _ordered(cls, max_len: int, info: ValidationInfo) -> int:
        min_len = info.data.get("min_len")
        if min_len is not None and max_len < min_len:
            raise ValueError(f"max_len ({max_len}) is below min_len ({min_len})")
        return max_len
