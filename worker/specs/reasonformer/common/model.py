"""The ``model`` block of both ReasonFormer specs (paper 001; docs/experiments/reasonformer.md): the
variant, its backbone, skills and routing, and the check of its skills against the data's."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from worker.specs.base import StrictModel
from worker.specs.confine import ModelName
from worker.specs.reasonformer.common.skills import DEFAULT_SKILL_COUNT, SYNTHETIC_SKILLS

Variant = Literal["shared", "private", "single", "morm", "t5"]


class ModelSpec(StrictModel):
    """The model: ReasonFormer (shared | private | single), or a baseline of the same kind: MoRM (the last
    blocks duplicated per skill, depth 1, no routing loss; section 4.3.3) or plain T5."""

    variant: Variant = Field(
        "shared",
        description="shared: one module per skill reused across steps with per-step adapters (3.2.2); private: "
        "a module per (step, skill) (3.2.3); single: shared at depth 1 without adapters (4.3.1); morm: MoRM "
        "(4.3.3); t5: plain T5",
    )
    backbone: ModelName = Field(
        "t5-tiny",
        min_length=1,
        max_length=500,
        description="T5 backbone: a preset (t5-tiny, t5-mini, t5-v1_1-small/base/large: random init), a "
        "folder of the model store (relative to it) or a hub id (google/t5-v1_1-base, the paper's)",
    )
    skills: list[str] | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="reasoning skills, one module each; null = the data's (synthetic: reverse sort shift lookup "
        "rotate general; otherwise the paper's: logic qa ner nli fact general)",
    )
    depth: int | None = Field(
        None, ge=1, le=16, description="maximum reasoning depth; null = 3 (the paper's), single and morm 1"
    )
    representation_layers: int = Field(
        2, ge=1, le=128, description="encoder blocks in the representation module (paper, T5-base: 9)"
    )
    module_layers: int | None = Field(
        1,
        ge=1,
        le=128,
        description="blocks per reasoning module (CPU demo: 1); null = the paper's: shared, "
        "single and morm 3, private 1",
    )
    top_k: int | None = Field(
        2, ge=1, le=64, description="modules activated per step (sparse, paper: 2); null = full activation"
    )
    adapter_bottleneck: int | None = Field(
        32,
        ge=1,
        le=65536,
        description="reasoning adapter width, shared variant only (paper: 256); null = none",
    )
    stop_gate: bool = Field(True, description="the stop gate after each step (section 3.2.1, eq. 4)")
    routing_loss_weight: float | None = Field(
        None,
        ge=0.0,
        le=100.0,
        description="weight of the skill-routing loss in pre-training; null = 1, morm 0",
    )
    router_hidden: int = Field(
        64, ge=1, le=65536, description="hidden width of the router's and stop gate's FFN"
    )
    general_skill: str | None = Field(
        "general", description="the skill every pre-training instance also activates; null = none"
    )
    dropout: float | None = Field(None, ge=0.0, lt=1.0, description="backbone dropout; null = the backbone's")
    dispatch: Literal["sparse", "masked"] = Field(
        "sparse", description="sparse: each module runs on its instances only; masked: every module on all"
    )

    @field_validator("skills")
    @classmethod
    def _distinct(cls, skills: list[str] | None) -> list[str] | None:
        if skills is not None:
            if any(not s.strip() for s in skills):
                raise ValueError("skill names must not be empty")
            if len(set(skills)) != len(skills):
                raise ValueError(f"skills must be distinct, got {skills}")
        return skills

    @field_validator("depth")
    @classmethod
    def _depth_of_variant(cls, depth: int | None, info: ValidationInfo) -> int | None:
        variant = info.data.get("variant")
        if variant in ("single", "morm") and depth not in (None, 1):
            raise ValueError(f"variant {variant} has depth 1 (paper, sections 4.3.1 and 4.3.3), got {depth}")
        return depth

    @field_validator("top_k")
    @classmethod
    def _top_k_fits(cls, top_k: int | None, info: ValidationInfo) -> int | None:
        skills = info.data.get("skills")
        n = len(skills) if skills else DEFAULT_SKILL_COUNT
        if top_k is not None and top_k > n:
            raise ValueError(f"top_k ({top_k}) exceeds the number of skills ({n})")
        return top_k

    @field_validator("routing_loss_weight")
    @classmethod
    def _morm_has_no_routing_loss(cls, weight: float | None, info: ValidationInfo) -> float | None:
        if info.data.get("variant") == "morm" and weight not in (None, 0.0):
            raise ValueError("MoRM is trained without the skill-routing loss: set routing_loss_weight to 0")
        return weight

    @field_validator("general_skill")
    @classmethod
    def _general_is_a_skill(cls, general: str | None, info: ValidationInfo) -> str | None:
        skills = info.data.get("skills")
        if general is not None and skills is not None and general not in skills:
            raise ValueError(f"general_skill {general!r} is not one of the skills {skills}")
        return general

    def resolved_skills(self, default: list[str]) -> list[str]:
        return list(self.skills) if self.skills is not None else list(default)

    def resolved_depth(self) -> int:
        return self.depth if self.depth is not None else (1 if self.variant in ("single", "morm") else 3)

    def resolved_routing_loss_weight(self) -> float:
        if self.routing_loss_weight is not None:
            return self.routing_loss_weight
        return 0.0 if self.variant == "morm" else 1.0


def error_below(loc: tuple[str | int, ...], kind: str, message: str, value: Any) -> ValidationError:
    """A validation error at ``loc`` below the field being validated (so a 422 names the exact field)."""
    return ValidationError.from_exception_data(
        "spec", [InitErrorDetails(type=PydanticCustomError(kind, message), loc=loc, input=value)]
    )


def check_skills_against_data(model: ModelSpec, source: str) -> ModelSpec:
    """Synthetic data knows its skills: a model skill that is neither one of them nor ``general`` is an
    unknown skill (a 422 at ``model.skills.<i>``), and every primitive needs a module."""
    if source != "synthetic" or model.skills is None or model.variant == "t5":
        return model
    known = set(SYNTHETIC_SKILLS)
    for i, skill in enumerate(model.skills):
        if skill not in known:
            raise error_below(
                ("skills", i),
                "unknown_skill",
                f"unknown skill {skill!r}: the synthetic suite's skills are {', '.join(SYNTHETIC_SKILLS)}",
                skill,
            )
    missing = [s for s in SYNTHETIC_SKILLS[:-1] if s not in model.skills]
    if missing:
        raise error_below(
            ("skills",), "missing_skill", f"the synthetic suite needs a module for {missing}", model.skills
        )
    return model
