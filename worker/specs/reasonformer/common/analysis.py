"""The ``analysis`` block of both ReasonFormer specs: the routing analysis' case studies."""

from __future__ import annotations

from pydantic import Field

from worker.specs.base import StrictModel


class AnalysisSpec(StrictModel):
    cases_per_task: int = Field(3, ge=0, le=100, description="case studies (top-2 skills per step) per task")
