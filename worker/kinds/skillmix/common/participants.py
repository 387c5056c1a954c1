"""The student that writes a cell's texts and the grader that grades them, as the run loads them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from worker.core.models import LoadedModel
from worker.core.skillmix.chat import ChatModel
from worker.core.skillmix.hf_chat import HFChat
from worker.core.skillmix.rule_grader import RuleGrader
from worker.kinds.skillmix.common.loading import devices_of, endpoint_model, hf_model, placement
from worker.kinds.skillmix.common.routing import NO_ROUTING, routing
from worker.specs.skillmix.skillmix import SkillmixSpec
from worker.tracking.context import RunContext, RunError


@dataclass
class Student:
    """The model that writes the texts: what it is, what names its replies in the cache, its routing
    (``ept`` and the rest, all None for an endpoint), and where an HF student was loaded."""

    model: ChatModel
    label: str
    kind: str  # "endpoint" or "hf"
    key: dict[str, Any]
    route: dict[str, Any]
    loaded: LoadedModel | None = None  # an HF student (a local grader of the same settings shares it)
    devices: dict[str, int] = field(default_factory=dict)  # modules per device under a device_map


@dataclass
class Grader:
    """The model that grades: what it is, what names its replies in the cache (None: its identity), and
    where a local grader loaded on its own was placed."""

    model: ChatModel
    label: str
    key: dict[str, Any] | None = None
    devices: dict[str, int] = field(default_factory=dict)


def load_student(spec: SkillmixSpec, ctx: RunContext, device: torch.device) -> Student:
    s = spec.student
    if s.endpoint is not None:
        endpoint = endpoint_model(s.endpoint, "student.endpoint", ctx)
        key: dict[str, Any] = {"model": endpoint.identity, "ept": None}
        return Student(endpoint, s.endpoint.model, "endpoint", key, dict(NO_ROUTING))
    where = placement(s.device_map, s.max_memory, spec.resources.gpus)
    lm = hf_model(s.name, s.dtype, spec.seed, device, "student", "name", where)
    devices = devices_of(lm)
    route = routing(lm.model, spec.ept, s.name)
    chat = HFChat(lm.model, lm.tokenizer, s.name, batch_size=s.batch_size)
    # a random preset's weights depend on the seed; a loaded checkpoint's do not
    weights = f"seed{spec.seed}" if lm.source == "preset" else lm.source
    key = {"model": chat.identity, "weights": weights, "dtype": s.dtype, "ept": route["ept"]}
    return Student(chat, s.name, "hf", key, route, loaded=lm, devices=devices)


def load_grader(spec: SkillmixSpec, ctx: RunContext, device: torch.device, student: Student) -> Grader:
    """The rules, an endpoint, or a local HF model: the student's own when it has the same settings
    (and no ept changed its routing)."""
    g, s = spec.grader, spec.student
    if g.type == "endpoint":
        if g.endpoint is None:  # the spec refuses this; a hand-built one is told the same
            raise RunError("grader.endpoint: a grader of type endpoint needs one")
        return Grader(endpoint_model(g.endpoint, "grader.endpoint", ctx), f"endpoint:{g.endpoint.model}")
    if g.type != "local":
        return Grader(RuleGrader(), "rules")
    same = (g.model, g.dtype, g.device_map, g.max_memory) == (s.name, s.dtype, s.device_map, s.max_memory)
    glm = student.loaded if same and spec.ept is None else None
    devices: dict[str, int] = {}
    if glm is None:
        where = placement(g.device_map, g.max_memory, spec.resources.gpus)
        glm = hf_model(g.model, g.dtype, spec.seed, device, "grader", "model", where)
        devices = devices_of(glm)
    chat = HFChat(glm.model, glm.tokenizer, g.model, batch_size=s.batch_size)
    # a float32 grader keeps the cache keys it always had
    key = {"model": chat.identity, "dtype": g.dtype} if g.dtype != "float32" else None
    return Grader(chat, f"local:{g.model}", key, devices)
