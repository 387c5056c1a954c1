"""A page's seed groups as the API answers them (``RunPage.groups``): each group's key, size, first members
and per metric column statistics."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

MEMBERS = 100  # run ids listed per group (RunGroup.run_ids)


class MetricStats(BaseModel):
    """One metric column over a group's members: ``n`` members with a finite value, their mean, sample
    standard deviation (ddof 1), the 95% Student-t interval of the mean (mean +- t(0.975, n-1) * std /
    sqrt(n)), min and max. std and the interval are null below two values (never a fake interval); all
    but n are null without any value."""

    n: int
    mean: float | None
    std: float | None
    ci_low: float | None
    ci_high: float | None
    min: float | None
    max: float | None


class RunGroup(BaseModel):
    """Runs that share the group fields' values (GET /runs?group_by=)."""

    key: dict[str, Any] = Field(
        description="the group fields' values by field; for group_by=default the spec without seed (one member's)"
    )
    n: int = Field(description="how many runs the group holds")
    run_ids: list[int] = Field(description="the group's runs, ascending (the first 100)")
    metrics: dict[str, MetricStats] = Field(
        description="per metric column (the metrics parameter, as written)"
    )
