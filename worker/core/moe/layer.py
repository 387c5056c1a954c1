"""The sparse mixture-of-experts feed-forward layer (SMoE paper 004, section 2.1, appendix A.2.1 Listing 1)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from worker.core.moe.config import MoEConfig
from worker.core.moe.dispatch import dense_masked_moe, grouped_moe
from worker.core.moe.experts import Experts, grouped_mm_unavailable_reason, lecun_normal_
from worker.core.moe.routing import (
    at_least_fp32,
    load_balancing_loss,
    routing_entropy,
    tokens_per_expert,
    top_k_softmax,
)
from worker.core.moe.sorted_dispatch import sorted_moe


@dataclass
class MoEAux:
    """What the router did on one forward pass (N = tokens, flattened over the leading dimensions)."""

    router_logits: Tensor  # [N, E] float (float32 for half inputs); noisy in training when router_noise > 0
    selected_experts: Tensor  # [N, k] long, slots by decreasing logit
    routing_weights: Tensor  # [N, k], softmax over the top-k logits (Listing 1 line 31)
    tokens_per_expert: Tensor  # [E] long, sums to N * k
    routing_entropy: Tensor  # scalar, mean entropy of the full softmax router distribution (detached)
    load_balance_loss: Tensor  # scalar, coef already applied; zeros(()) when coef == 0


class SparseMoE(nn.Module):
    """y = sum_j w_j * expert_{e_j}(x) over each token's top-k experts; w = softmax of the top-k logits.

    router: Linear(d_model, E, bias=False) (Listing 1 line 23, flax default init); experts: see `Experts`.
    `top_k` is a plain attribute: set it after construction to sweep experts-per-token at inference
    (``set_top_k`` sets it on every layer of a model).
    """

    # The weights are a softmax over the kept top-k logits: they sum to 1 at every k (Listing 1 line 31).
    renormalises = True

    def __init__(self, cfg: MoEConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.top_k = cfg.top_k
        self.router = nn.Linear(cfg.d_model, cfg.num_experts, bias=False)
        lecun_normal_(self.router.weight, fan_in=cfg.d_model)
        self.experts = Experts(
            cfg.num_experts, cfg.d_model, cfg.expert_hidden, cfg.activation, cfg.fused_gate_up
        )
        # The dispatch the last forward actually ran ("grouped_mm" may fall back to "sorted").
        self.last_dispatch = cfg.dispatch

    def forward(self, x: Tensor) -> tuple[Tensor, MoEAux]:
        cfg = self.cfg
        E, k = cfg.num_experts, self.top_k
        if not 1 <= k <= E:
            raise ValueError(f"top_k must be in 1..{E}, got {k}")
        assert x.shape[-1] == cfg.d_model, f"expected last dim {cfg.d_model}, got shape {tuple(x.shape)}"
        x_flat = x.reshape(-1, cfg.d_model)  # [N, d]

        router_logits = at_least_fp32(self.router(x_flat))  # [N, E]
        if self.training and cfg.router_noise > 0:
            router_logits = router_logits + torch.randn_like(router_logits) * cfg.router_noise
        routing_weights, selected_experts = top_k_softmax(router_logits, k)  # [N, k], [N, k]

        y = self._dispatch(x_flat, selected_experts, routing_weights)  # [N, d]

        if cfg.load_balance_coef > 0:
            lb_loss = load_balancing_loss(router_logits, selected_experts, cfg.load_balance_coef)
        else:
            lb_loss = router_logits.new_zeros(())
        aux = MoEAux(
            router_logits=router_logits,
            selected_experts=selected_experts,
            routing_weights=routing_weights,
            tokens_per_expert=tokens_per_expert(selected_experts, E),
            routing_entropy=routing_entropy(router_logits),
            load_balance_loss=lb_loss,
        )
        return y.view(x.shape), aux

    def _dispatch(self, x: Tensor, selected_experts: Tensor, routing_weights: Tensor) -> Tensor:
        dispatch = self.cfg.dispatch
        if dispatch == "grouped_mm":
            reason = grouped_mm_unavailable_reason(x, self.experts)
            if reason is not None:
                warnings.warn(
                    f"SparseMoE dispatch 'grouped_mm' falls back to 'sorted': {reason}", stacklevel=3
                )
                dispatch = "sorted"
        self.last_dispatch = dispatch
        if dispatch == "dense":
            return dense_masked_moe(x, self.experts, selected_experts, routing_weights)
        if dispatch == "grouped_mm":
            return grouped_moe(x, self.experts, selected_experts, routing_weights)
        return sorted_moe(
            x,
            self.experts,
            selected_experts,
            routing_weights,
            padded=self.cfg.padded_bmm,
            fold=self.cfg.fold_routing_weight,
            pad_max_waste=self.cfg.pad_max_waste,
        )


def set_top_k(model: nn.Module, k: int) -> int:
    """Inference-time experts-per-token: set ``top_k`` on every ``SparseMoE`` of ``model`` (a model trained at
    one k, evaluated at another: the SMoE paper's top-k axis, section 2.1). Returns how many layers were set.

    Raises ValueError for a model without a SparseMoE or ``k`` outside 1..E of a layer.
    """
    layers = [m for m in model.modules() if isinstance(m, SparseMoE)]
    if not layers:
        raise ValueError(f"{type(model).__name__} has no SparseMoE layer")
    for layer in layers:
        E = layer.cfg.num_experts
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= E:
            raise ValueError(f"top_k must be an integer in 1..{E}, got {k!r}")
    for layer in layers:
        layer.top_k = k
    return len(layers)
