"""A claim's shape: its definition (strict: an unknown field is a 422 naming its path), typed in the OpenAPI
document as the kinds' specs are (the metric's reading and the test are discriminated unions), and what the
API answers: the claim, its versions and its evaluation (backend/claims/evaluate.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

QUERY_MAX_BYTES = 4096
MAX_ARMS = 10
# a claim's name: letters, digits, spaces and . _ - : , = + ( ) < > / ', no space at either end
NAME_PATTERN = r"^[A-Za-z0-9._:,=+()<>/'-]([A-Za-z0-9 ._:,=+()<>/'-]{0,198}[A-Za-z0-9._:,=+()<>/'-])?$"
ClaimName = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=NAME_PATTERN)]
ArmName = Annotated[str, StringConstraints(min_length=1, max_length=100, pattern=r"^[^\x00-\x1f\x7f]+$")]
# a metric's key (``loss``, ``val/acc``): no control characters
MetricName = Annotated[str, StringConstraints(min_length=1, max_length=250, pattern=r"^[^\x00-\x1f\x7f]+$")]
FamilyName = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")]
Verdict = Literal["supported", "contradicted", "inconclusive"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Arm(Strict):
    """One arm: the runs a query of the query language selects in the claim's project (only those that
    succeeded count), one value per run; a run's seed is its spec's ``seed``."""

    name: ArmName
    query: str = Field(
        min_length=1, description=f"a query-language expression, at most {QUERY_MAX_BYTES} bytes"
    )

    @field_validator("query")
    @classmethod
    def _query_size(cls, value: str) -> str:
        if len(value.encode("utf-8")) > QUERY_MAX_BYTES:
            raise ValueError(f"at most {QUERY_MAX_BYTES} bytes")
        if not value.strip():
            raise ValueError("a query selects the arm's runs: it may not be blank")
        return value


class ReadLast(Strict):
    """The series' last value (its largest step)."""

    mode: Literal["last"] = "last"


class ReadBest(Strict):
    """The series' best value: its minimum or maximum by the run's kind's declared metric direction (a key
    no kind declares a direction for is a 422; a run whose kind declares none has no value and does not
    count)."""

    mode: Literal["best"] = "best"


class ReadMeanLast(Strict):
    """The mean of the series' last ``steps`` finite points (by step)."""

    mode: Literal["mean_last"] = "mean_last"
    steps: int = Field(ge=1, le=100_000)


Reading = Annotated[ReadLast | ReadBest | ReadMeanLast, Field(discriminator="mode")]


class TTest(Strict):
    """Student-t tests of the difference of means. ``pairing``: ``auto`` pairs runs by seed when the arms
    share at least two seeds and each seed appears once per arm (a paired t test on the differences), and
    uses Welch's t test otherwise; ``paired`` always pairs (only the shared seeds count); ``welch`` never."""

    type: Literal["t"] = "t"
    pairing: Literal["auto", "paired", "welch"] = "auto"


class BootstrapTest(Strict):
    """A percentile bootstrap of the difference of means (pairs resampled when paired by seed as for
    ``t``/``auto``, each arm resampled on its own otherwise); ``resamples`` draws from a generator seeded
    with ``seed``, so the same data give the same answer."""

    type: Literal["bootstrap"] = "bootstrap"
    resamples: int = Field(default=10_000, ge=100, le=100_000)
    seed: int = Field(default=0, ge=0, le=2**32 - 1)


Test = Annotated[TTest | BootstrapTest, Field(discriminator="type")]


class ClaimDefinition(Strict):
    """What a claim states. The first arm is the reference: with arms A (the first), B, C... the claim is
    that each other arm's mean differs from A's in ``direction`` (``greater``: B - A > 0) by at least
    ``min_effect``; each comparison is one hypothesis of the ``family`` (Holm's correction runs over every
    comparison of every claim of the project in the family)."""

    section: str = Field(min_length=1, max_length=300, description="the paper's section the claim tests")
    description: str = Field(default="", max_length=20_000, description="markdown")
    arms: list[Arm] = Field(min_length=2, max_length=MAX_ARMS)
    metric: MetricName
    read: Reading = Field(default_factory=ReadLast)
    direction: Literal["greater", "less"]
    min_effect: float = Field(
        default=0.0, ge=0.0, allow_inf_nan=False, description="the smallest effect worth reporting (>= 0)"
    )
    test: Test = Field(default_factory=TTest)
    alpha: float = Field(default=0.05, gt=0.0, le=0.5, allow_inf_nan=False)
    power: float = Field(
        default=0.8, ge=0.5, lt=1.0, allow_inf_nan=False, description="the power the needed n is computed for"
    )
    family: FamilyName | None = Field(
        default=None, description="the claims Holm's correction runs over; none: a family of its own"
    )

    @field_validator("arms")
    @classmethod
    def _distinct_names(cls, value: list[Arm]) -> list[Arm]:
        names = [a.name for a in value]
        if len(set(names)) != len(names):
            raise ValueError("two arms have the same name")
        return value


class ClaimCreate(Strict):
    name: ClaimName
    definition: ClaimDefinition


class ClaimPatch(Strict):
    """Rename a claim, replace its definition (a new version), or both."""

    name: ClaimName | None = None
    definition: ClaimDefinition | None = None


class ArmResult(BaseModel):
    """An arm's runs that count (succeeded, with a finite value): n, mean, sample standard deviation and
    the (1 - alpha) Student-t interval of the mean; null below two values (never a fake interval)."""

    name: str
    n: int
    mean: float | None
    std: float | None
    ci_low: float | None
    ci_high: float | None
    run_ids: list[int] = Field(description="the runs that count, ascending (the first 100)")


class Comparison(BaseModel):
    """One hypothesis: ``arm`` against the reference arm. ``effect`` = mean(arm) - mean(reference) (paired:
    the mean of the per-seed differences), its (1 - alpha) interval, the test's two-sided p-value and the
    same adjusted by Holm's method within the family; ``needed_n`` the runs per arm (pairs when paired) a
    power calculation asks for to decide at ``min_effect`` (the observed effect when that is 0)."""

    arm: str
    reference: str
    test: Literal["paired", "welch", "bootstrap_paired", "bootstrap"] | None
    n: int = Field(description="pairs when paired, else the smaller arm's n")
    effect: float | None
    ci_low: float | None
    ci_high: float | None
    statistic: float | None = Field(description="t (null for a bootstrap)")
    df: float | None
    p_value: float | None
    p_adjusted: float | None
    verdict: Verdict
    reason: str
    needed_n: int | None


class Preregistration(BaseModel):
    """``status``: ``pre-registered`` (locked before the first matching run started, and the locked version
    is the one deciding), ``locked late`` (locked after the first matching run started), ``edited after
    lock`` (the deciding version is not the locked one), ``not locked``."""

    status: Literal["pre-registered", "locked late", "edited after lock", "not locked"]
    locked_version: int | None
    locked_hash: str | None
    locked_at: datetime | None
    locked_by: str | None
    first_run_started_at: datetime | None = Field(
        description="the first run the deciding version's arms select"
    )


class Evaluation(BaseModel):
    """The claim on the data now. The claim's verdict: ``supported`` when every comparison is,
    ``contradicted`` when any is, ``inconclusive`` otherwise."""

    version: int = Field(description="the version that decided (the current one)")
    hash: str
    verdict: Verdict
    arms: list[ArmResult]
    comparisons: list[Comparison]
    family: str
    family_size: int = Field(description="the hypotheses Holm's correction ran over")
    preregistration: Preregistration
    evaluated_at: datetime


class ClaimPublic(BaseModel):
    id: int
    project_id: int
    name: str
    version: int
    hash: str = Field(description="SHA-256 of the current version's definition (canonical JSON)")
    definition: ClaimDefinition
    author: str | None
    created_at: datetime
    updated_at: datetime
    review: Literal["approved", "changes_requested"] | None = Field(description="the latest review's state")
    can_edit: bool
    evaluation: Evaluation


class ClaimPage(BaseModel):
    items: list[ClaimPublic]
    next_cursor: str | None = Field(description="the next page's ``cursor``; null on the last page")


class ClaimVersionPublic(BaseModel):
    version: int
    hash: str
    definition: ClaimDefinition
    author: str | None
    created_at: datetime


class ClaimReviewIn(Strict):
    state: Literal["approved", "changes_requested"]
    body: str = Field("", max_length=100_000)


class ClaimReviewPublic(BaseModel):
    id: int
    claim_id: int
    version: int
    reviewer: str | None
    state: str
    body: str
    created_at: datetime


class ClaimCommentIn(Strict):
    body: str = Field(min_length=1, max_length=100_000, description="markdown")


class ClaimCommentPublic(BaseModel):
    id: int
    claim_id: int
    author: str | None
    body: str
    created_at: datetime
