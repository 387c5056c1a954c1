"""The cascaded reasoning process (paper 001, section 3.2, Figure 2): from H^0, ``depth`` reasoning steps,
each routing the instance to its top-k skills (eq. 3), combining their modules (eq. 2) and gating the
update (eq. 4). Backbone-agnostic: the blocks run through the context (``blocks.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from worker.core.reasonformer.blocks import BlockContext
from worker.core.reasonformer.config import ReasoningConfig
from worker.core.reasonformer.dispatch import masked_dispatch, sparse_dispatch
from worker.core.reasonformer.reasoning import ReasoningModule
from worker.core.reasonformer.router import SkillRouter
from worker.core.reasonformer.routing import dense_weights, skill_probs, top_k_routing
from worker.core.reasonformer.stop_gate import StopGate, gated_residual


@dataclass
class ReasoningTrace:
    """What the router and the stop gates decided, batch first (HF's generate expands dim 0 for beams).

    router_logits [B, S, n]; routing_weights, selected_skills [B, S, k]; stop_gates [B, S] or None.
    """

    router_logits: Tensor
    routing_weights: Tensor
    selected_skills: Tensor
    stop_gates: Tensor | None

    @property
    def probs(self) -> Tensor:
        """The dense skill distribution of every step (eq. 3): [B, S, n]."""
        return skill_probs(self.router_logits)


class CascadedReasoner(nn.Module):
    """Receives its parts: the router, the reasoning modules (shared or single/MoRM: one per skill; private:
    ``modules[step][skill]``) and the stop gates (one per step, or None)."""

    def __init__(
        self,
        cfg: ReasoningConfig,
        router: SkillRouter,
        modules: Sequence[ReasoningModule] | Sequence[Sequence[ReasoningModule]],
        gates: Sequence[StopGate] | None,
    ) -> None:
        super().__init__()
        self.cfg = cfg
        self.router = router
        n, S = cfg.num_skills, cfg.depth
        if cfg.variant == "private":
            assert len(modules) == S and all(len(m) == n for m in modules), (  # type: ignore[arg-type]
                f"private modules must be [depth={S}][skills={n}]"
            )
            self.modules_by_step = nn.ModuleList([nn.ModuleList(m) for m in modules])  # type: ignore[arg-type]
        else:
            assert len(modules) == n, f"one module per skill: {len(modules)} for {n} skills"
            self.skill_modules = nn.ModuleList(modules)  # type: ignore[arg-type]
        assert (gates is not None) == cfg.stop_gate, "stop gates present iff cfg.stop_gate"
        assert gates is None or len(gates) == S, f"one stop gate per step: {len(gates or [])} for {S}"
        self.gates = nn.ModuleList(gates) if gates is not None else None

    # Sparse activation renormalises the kept skill probabilities to sum to 1 (routing.top_k_routing).
    renormalises = True

    @property
    def num_experts(self) -> int:
        """The skills the router chooses among (E of the experts-per-token knob)."""
        return self.cfg.num_skills

    @property
    def top_k(self) -> int:
        """Modules activated per step: the experts-per-token knob (``worker.core.models.routers``)."""
        return self.cfg.k

    @top_k.setter
    def top_k(self, k: int) -> None:
        n = self.cfg.num_skills
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n:
            raise ValueError(f"top_k must be an integer in 1..{n} (the skills), got {k!r}")
        self.cfg.top_k = k

    def modules_at(self, step: int) -> Sequence[ReasoningModule]:
        if self.cfg.variant == "private":
            return self.modules_by_step[step]  # type: ignore[return-value]
        return self.skill_modules  # type: ignore[return-value]

    def forward(self, h0: Tensor, ctx: BlockContext, pool_mask: Tensor) -> tuple[Tensor, ReasoningTrace]:
        """h0: [B, T, d] (H^0); pool_mask: [B, T] (tokens the router and gates pool over).
        Returns (H~ of the last step [B, T, d], the trace)."""
        cfg = self.cfg
        h = h0
        logits_all, weights_all, selected_all, gates_all = [], [], [], []
        for step in range(cfg.depth):
            router_logits = self.router(h, ctx, pool_mask, step)  # [B, n], eq. 3 before the softmax
            probs = skill_probs(router_logits)  # [B, n]
            routing_weights, selected_skills = top_k_routing(probs, cfg.k)  # [B, k], [B, k]
            modules = self.modules_at(step)
            if cfg.dispatch == "sparse":
                h_step = sparse_dispatch(h, modules, routing_weights, selected_skills, ctx, step)  # eq. 2
            else:
                dense = dense_weights(routing_weights, selected_skills, cfg.num_skills)  # [B, n]
                h_step = masked_dispatch(h, modules, dense, ctx, step)  # eq. 2, reference
            if self.gates is not None:
                gate = self.gates[step](h_step, pool_mask)  # [B]
                h = gated_residual(h, h_step, gate)  # eq. 4
                gates_all.append(gate)
            else:
                h = h_step
            logits_all.append(router_logits)
            weights_all.append(routing_weights)
            selected_all.append(selected_skills)
        trace = ReasoningTrace(
            router_logits=torch.stack(logits_all, dim=1),  # [B, S, n]
            routing_weights=torch.stack(weights_all, dim=1),  # [B, S, k]
            selected_skills=torch.stack(selected_all, dim=1),  # [B, S, k]
            stop_gates=torch.stack(gates_all, dim=1) if gates_all else None,  # [B, S]
        )
        return h, trace


def set_skill_top_k(model: nn.Module, k: int) -> int:
    """Inference-time top-k of the skill router (section 3.2.1, "we sparsely activate k reasoning modules"):
    set k on every ``CascadedReasoner`` of ``model`` and in a ReasonFormer config's ``reasoning_config``, so
    a model pre-trained at one k runs at another. Returns how many reasoners were set.

    Raises ValueError for a model without a reasoner or ``k`` outside 1..(number of skills).
    """
    reasoners = [m for m in model.modules() if isinstance(m, CascadedReasoner)]
    if not reasoners:
        raise ValueError(f"{type(model).__name__} has no skill router (no CascadedReasoner)")
    for reasoner in reasoners:
        reasoner.top_k = k  # validates against the reasoner's skills
    reasoning = getattr(getattr(model, "config", None), "reasoning_config", None)
    if isinstance(reasoning, dict):
        reasoning["top_k"] = k
    return len(reasoners)
