"""A saved view's shape: the state of a runs, experiments or compare page (query, columns with their
aggregates, grouping, sort, the group chart's metric and mode, each chart's options, the compared runs),
strict: an unknown field is a 422 naming its path.

The dashboard writes the same state into a page's URL (frontend/src/lib/viewState.ts, docs/frontend.md),
so an unsaved view reproduces from its URL and a saved one from ``GET .../views/{id}``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

# a field of the query language: a plain name (``status``, ``created_at``) or a dotted path under one
# (``params.model.lr``, ``metrics.val/loss``): no spaces, no control characters
FIELD_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[^\s\x00-\x1f\x7f]+)?$"
FieldName = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=FIELD_PATTERN)]
# a view's name: letters, digits, spaces and . _ - : , = + ( ) < > /, no space at either end
NAME_PATTERN = r"^[A-Za-z0-9._:,=+()<>/-]([A-Za-z0-9 ._:,=+()<>/-]{0,98}[A-Za-z0-9._:,=+()<>/-])?$"
ViewName = Annotated[str, StringConstraints(min_length=1, max_length=100, pattern=NAME_PATTERN)]
# a metric's key (``loss``, ``val/acc``, ``system/cpu_percent``): no control characters
MetricName = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f\x7f]+$")]
# a chart's smoothing: the EMA weight of the dashboard's slider (lib/metricPanels.ts MAX_SMOOTHING)
MAX_SMOOTHING = 0.99
RunId = Annotated[int, Field(ge=1)]
QUERY_MAX_BYTES = 4096
DEFAULT_GROUP = "all spec fields but seed"

Aggregate = Literal["last", "min", "max", "best"]
Page = Literal["runs", "experiments", "compare"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Column(Strict):
    """A table column: a field, for a metric the aggregate shown (default ``last``), and its width."""

    field: FieldName
    aggregate: Aggregate | None = None
    width: int | None = Field(default=None, ge=40, le=2000, description="pixels")


class Sort(Strict):
    field: FieldName
    order: Literal["asc", "desc"] = "asc"
    aggregate: Aggregate | None = Field(default=None, description="for a metrics.<key> field")


class Chart(Strict):
    """How the page's chart draws a group: its mean with a 95% CI band, its min/max envelope, or every
    member; over steps or wall-clock time."""

    metric: MetricName
    mode: Literal["mean_ci", "envelope", "members"] = "mean_ci"
    x: Literal["step", "time"] = "step"


class ChartOptions(Strict):
    """How the charts of one metric draw: a log y axis, EMA smoothing (the weight, 0 = raw), and the x
    axis (the step, wall-clock time, or the time since the run started)."""

    metric: MetricName
    log_scale: bool = False
    smoothing: float = Field(default=0.0, ge=0.0, le=MAX_SMOOTHING, allow_inf_nan=False)
    x_axis: Literal["step", "time", "relative"] = "step"


class ViewState(Strict):
    """What a view restores. ``group_by``: none, a list of fields, or the literal default
    ``"all spec fields but seed"`` (seed groups). ``runs``: the compare page's runs, by id."""

    query: str = Field(
        default="", description=f"a query-language expression, at most {QUERY_MAX_BYTES} bytes"
    )
    columns: list[Column] = Field(default_factory=list, max_length=200)
    group_by: list[FieldName] | Literal["all spec fields but seed"] | None = Field(default=None)
    sort: Sort | None = None
    chart: Chart | None = None
    charts: list[ChartOptions] = Field(
        default_factory=list, max_length=200, description="each metric's chart options, a metric at most once"
    )
    runs: list[RunId] = Field(
        default_factory=list,
        max_length=200,
        description="the compared runs' ids (the compare page), each once",
    )

    @field_validator("query")
    @classmethod
    def _query_size(cls, value: str) -> str:
        if len(value.encode("utf-8")) > QUERY_MAX_BYTES:
            raise ValueError(f"at most {QUERY_MAX_BYTES} bytes")
        return value

    @field_validator("group_by")
    @classmethod
    def _group_fields(cls, value: list[str] | str | None) -> list[str] | str | None:
        if isinstance(value, list):
            if len(value) > 50:
                raise ValueError("at most 50 fields")
            if len(set(value)) != len(value):
                raise ValueError("a field is named twice")
            if not value:
                return None  # no fields is no grouping: one form for it
        return value

    @field_validator("runs")
    @classmethod
    def _each_run_once(cls, value: list[int]) -> list[int]:
        if len(set(value)) != len(value):
            raise ValueError("a run is named twice")
        return value

    @field_validator("charts")
    @classmethod
    def _one_entry_per_metric(cls, value: list[ChartOptions]) -> list[ChartOptions]:
        metrics = [c.metric for c in value]
        if len(set(metrics)) != len(metrics):
            raise ValueError("a metric is named twice")
        return value


class ViewCreate(Strict):
    name: ViewName
    page: Page
    state: ViewState = Field(default_factory=ViewState)


class ViewPatch(Strict):
    """Rename a view, replace its state, or both."""

    name: ViewName | None = None
    state: ViewState | None = None


class ViewPublic(BaseModel):
    id: int
    project_id: int
    name: str
    page: Page
    state: ViewState
    author: str | None
    created_at: datetime
    updated_at: datetime
    can_edit: bool = Field(description="whether the caller may rename, update or delete it")
