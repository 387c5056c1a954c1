"""The result records both ReasonFormer kinds post: ``reasonformer_eval`` (a model's scores per task) and
``routing`` (the per-step routing analysis), with their parts."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from worker.specs.base import StrictModel
from worker.specs.reasonformer.common.model import Variant


class TaskMetric(StrictModel):
    task: str
    reasoning: str | None = Field(None, description="the reasoning type Table 1 lists for the task")
    metric: Literal["accuracy", "exact_match"]
    value: float = Field(description="accuracy (choice: option of highest summed log-likelihood) or EM")
    value_norm: float | None = Field(None, description="choice: accuracy by length-normalised log-likelihood")
    count: int


class ParameterCount(StrictModel):
    total: int
    activated: int = Field(description="what one instance runs: k of n modules per step (Table 1)")
    tuned: int = Field(description="parameters trained (Table 3's #Tuned)")


class ReasonFormerEval(StrictModel):
    """Result record ``reasonformer_eval``: one model's scores per task (a column of Table 1, a row of
    Table 2 or 3), with what identifies the model in those tables."""

    kind: Literal["reasonformer_eval"] = "reasonformer_eval"
    stage: Literal["pretrain", "finetune"]
    label: str = Field(description="the column name in Table 1's style, e.g. 'Shared (S)'")
    variant: Variant
    activation: Literal["sparse", "full"] | None = Field(
        description="top-k (S) or all modules (F); null for T5"
    )
    top_k: int | None
    num_skills: int | None
    depth: int | None
    adapters: bool
    stop_gate: bool
    pretrained: bool = Field(
        description="reasoning-centric pre-training (RPT): initialised from a pretrain run"
    )
    modularity: bool = Field(description="the skill-routing loss was used in pre-training (Table 2)")
    freeze: Literal["none", "representation", "reasoning", "both"]
    few_shot: str | None = None
    source_run_id: int | None = None
    parameters: ParameterCount
    tasks: list[TaskMetric]
    average: float
    steps: int


class RoutingCaseStep(StrictModel):
    skills: list[str] = Field(description="the top-2 skills of the step, best first")
    weights: list[float]
    stop_gate: float | None = None


class RoutingCase(StrictModel):
    input: str
    target: str
    prediction: str | None = None
    expected: list[str | None] = Field(description="the right skill per step, where known")
    steps: list[RoutingCaseStep]


class TaskRoutingRecord(StrictModel):
    task: str
    count: int
    weights: list[list[float]] = Field(description="[step][skill] mean router weight (Figure 3)")
    stop_gates: list[float] | None = Field(None, description="[step] mean stop gate")
    expected: list[str | None] | None = Field(None, description="the right skill per step of this task")
    step_match: list[float | None] = Field(description="[step] top non-general skill == the expected one")
    match: float | None = None
    order_match: float | None = Field(None, description="instances whose every labelled step matched")
    cases: list[RoutingCase] = Field(default_factory=list)


class Routing(StrictModel):
    """Result record ``routing``: per task, steps x skills mean router weights, stop gates per step and
    case studies (section 5.4, Figure 3)."""

    kind: Literal["routing"] = "routing"
    stage: Literal["pretrain", "finetune"]
    label: str
    variant: Variant
    skills: list[str]
    depth: int
    top_k: int | None
    general_skill: str | None
    chance: float | None = Field(None, description="chance of a top-skill match: 1 / non-general skills")
    skill_match: float | None = Field(
        None, description="single-skill tasks: top skill == the instance's skill"
    )
    order_match_trained: float | None = Field(
        None, description="composites seen in pre-training: all steps right"
    )
    order_match_heldout: float | None = Field(
        None, description="composites never trained on: all steps right"
    )
    skill_match_n: int | None = Field(None, description="instances skill_match is a proportion of")
    order_match_trained_n: int | None = Field(
        None, description="instances order_match_trained is a proportion of"
    )
    order_match_heldout_n: int | None = Field(
        None, description="instances order_match_heldout is a proportion of"
    )
    tasks: list[TaskRoutingRecord]
