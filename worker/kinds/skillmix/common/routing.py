"""The routing of an MoE student: experts per token set on every router and what the model's routers are."""

from __future__ import annotations

from typing import Any

import torch

from worker.core.models.routers import RouterError, find_routers, set_experts_per_token
from worker.tracking.context import RunError

NO_ROUTING: dict[str, Any] = {
    "ept": None, "default_ept": None, "num_experts": None, "routers": None, "renormalises": None
}  # fmt: skip


def routing(model: torch.nn.Module, ept: int | None, name: str) -> dict[str, Any]:
    """Set ept on every router (``ept`` given) and describe the routing: ept in effect, the model's
    default, E, routers reached, whether they renormalise their top-k weights."""
    routers = find_routers(model)
    default = sorted({int(getattr(r.module, "top_k")) for r in routers})  # noqa: B009
    info: dict[str, Any] = {
        "ept": default[0] if len(default) == 1 else None,
        "default_ept": default[0] if len(default) == 1 else None,
        "num_experts": min((r.experts for r in routers if r.experts is not None), default=None),
        "routers": len(routers) or None,
        "renormalises": None,
    }
    flags = {r.renormalises for r in routers}
    info["renormalises"] = flags.pop() if len(flags) == 1 else None
    if ept is None:
        return info
    try:
        report = set_experts_per_token(model, ept)
    except RouterError as exc:
        raise RunError(f"ept: {ept} cannot be set on {name}: {exc}") from None
    info.update(
        ept=report.top_k, num_experts=report.experts, routers=report.routers, renormalises=report.renormalises
    )
    return info
