"""E expert MLPs stored as stacked parameters, and three ways to run them on rows.

SMoE paper (004), section 2.1 and appendix A.2.1, Listing 1 `MlpBlock`: each expert is a 2-layer MLP,
Dense(hidden) -> gelu -> Dense(d_model), both Dense layers with bias (flax's default). Flax `nn.gelu` is
`jax.nn.gelu` with `approximate=True`, so "gelu" here is the tanh approximation. Listing 1's dropout is not
part of this layer (MoEConfig has no dropout; the paper does not give a rate).

"swiglu" is Mixtral's expert (no biases): down(silu(x W_gate) * (x W_up)), for comparison with
HuggingFace's MixtralSparseMoeBlock at equal expert function. Its gate and up projections are stored either
fused, as HF stores them (`w_gate_up` [E, 2h, d], gate rows first, one GEMM x @ W.T per expert), or split
(`w_gate`, `w_up` [E, d, h], two GEMMs x @ W): `MoEConfig.fused_gate_up`. A state dict of either layout
loads into either (`_load_from_state_dict` converts), so checkpoints written before the fused layout load.

Parameters are [E, in, out] so one expert's projection is `x @ w[e]` (rows x [n, in]).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

# flax `lecun_normal` = variance_scaling(1, "fan_in", "truncated_normal"): a normal truncated at +-2 std,
# rescaled by this constant (the std of a unit normal truncated to [-2, 2]) so the variance is 1 / fan_in.
_TRUNCATED_NORMAL_STD = 0.87962566103423978


def lecun_normal_(weight: Tensor, fan_in: int) -> Tensor:
    """In-place flax `nn.Dense` default kernel init (Listing 1 uses flax defaults): variance 1 / fan_in."""
    std = math.sqrt(1.0 / fan_in) / _TRUNCATED_NORMAL_STD
    return nn.init.trunc_normal_(weight, mean=0.0, std=std, a=-2.0 * std, b=2.0 * std)


class Experts(nn.Module):
    """E homogeneous expert MLPs d_model -> expert_hidden -> d_model with stacked weights.

    gelu/relu: w1 [E, d, h], b1 [E, h], w2 [E, h, d], b2 [E, d] (biases zero-initialised, as flax).
    swiglu:    w_gate_up [E, 2h, d] (fused, HF's layout) or w_gate [E, d, h], w_up [E, d, h]; w_down [E, h, d].
    """

    # stacked per-expert biases are 2-D but biases: never weight-decayed (worker.core.train.decays)
    no_weight_decay = frozenset({"b1", "b2"})

    def __init__(
        self, num_experts: int, d_model: int, hidden: int, activation: str, fused_gate_up: bool = True
    ) -> None:
        super().__init__()
        self.fused_gate_up = fused_gate_up and activation == "swiglu"
        assert activation in ("gelu", "relu", "swiglu"), f"unknown activation {activation!r}"
        self.num_experts, self.d_model, self.hidden, self.activation = (
            num_experts,
            d_model,
            hidden,
            activation,
        )
        E, d, h = num_experts, d_model, hidden
        if self.fused_gate_up:
            self.w_gate_up = nn.Parameter(torch.empty(E, 2 * h, d))
            self.w_down = nn.Parameter(torch.empty(E, h, d))
        elif activation == "swiglu":
            self.w_gate = nn.Parameter(torch.empty(E, d, h))
            self.w_up = nn.Parameter(torch.empty(E, d, h))
            self.w_down = nn.Parameter(torch.empty(E, h, d))
        else:
            self.w1 = nn.Parameter(torch.empty(E, d, h))
            self.b1 = nn.Parameter(torch.empty(E, h))
            self.w2 = nn.Parameter(torch.empty(E, h, d))
            self.b2 = nn.Parameter(torch.empty(E, d))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for name, p in self.named_parameters():
            if name.startswith("b"):
                nn.init.zeros_(p)
            elif name == "w_gate_up":  # [E, 2h, d]: fan-in d, gate and up each as in the split layout
                lecun_normal_(p, fan_in=p.shape[2])
            else:
                lecun_normal_(p, fan_in=p.shape[1])

    def swiglu_weights(self) -> tuple[Tensor, Tensor, Tensor]:
        """(w_gate [E, d, h], w_up [E, d, h], w_down [E, h, d]) of a swiglu expert, views in either layout."""
        if self.fused_gate_up:
            h = self.hidden
            return self.w_gate_up[:, :h].transpose(1, 2), self.w_gate_up[:, h:].transpose(1, 2), self.w_down
        return self.w_gate, self.w_up, self.w_down

    def _load_from_state_dict(
        self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any
    ) -> None:
        """Convert a swiglu state dict of the other gate/up layout to this module's before loading."""
        fused, split = prefix + "w_gate_up", (prefix + "w_gate", prefix + "w_up")
        if self.activation == "swiglu":
            if self.fused_gate_up and fused not in state_dict and all(n in state_dict for n in split):
                wg, wu = state_dict.pop(split[0]), state_dict.pop(split[1])  # [E, d, h] each
                state_dict[fused] = torch.cat([wg, wu], dim=2).transpose(1, 2).contiguous()  # [E, 2h, d]
            elif not self.fused_gate_up and fused in state_dict and not any(n in state_dict for n in split):
                w = state_dict.pop(fused)  # [E, 2h, d]
                h = w.shape[1] // 2
                state_dict[split[0]] = w[:, :h].transpose(1, 2).contiguous()
                state_dict[split[1]] = w[:, h:].transpose(1, 2).contiguous()
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def _act(self, h: Tensor) -> Tensor:
        if self.activation == "gelu":
            return F.gelu(h, approximate="tanh")
        return F.relu(h)

    def forward_one(self, x: Tensor, e: int) -> Tensor:
        """Expert e on every row of x [n, d] -> [n, d]. Used by the dense reference (Listing 1).

        Weights are cast to x's dtype (bf16 activations with fp32 weights), as in the other dispatches.
        """
        if self.activation == "swiglu":
            wg, wu, wd = (p[e].to(x.dtype) for p in self.swiglu_weights())
            return (F.silu(x @ wg) * (x @ wu)) @ wd
        w1, b1, w2, b2 = (p[e].to(x.dtype) for p in (self.w1, self.b1, self.w2, self.b2))
        return self._act(x @ w1 + b1) @ w2 + b2

    def forward_grouped(self, xs: Tensor, counts: Tensor) -> Tensor:
        """Rows xs [S, d] sorted by expert, counts[e] rows for expert e ([E] long) -> [S, d].

        One `grouped_mm` per projection. Requires `grouped_mm_unavailable_reason` to be None for xs.
        """
        offs = torch.cumsum(counts, dim=0).to(torch.int32)  # [E], end row of each expert's slice
        if self.activation == "swiglu":
            wg, wu, wd = (p.to(xs.dtype).contiguous() for p in self.swiglu_weights())
            h = F.silu(_grouped_mm(xs, wg, offs)) * _grouped_mm(xs, wu, offs)  # [S, h]
            return _grouped_mm(h, wd, offs)
        w1, b1, w2, b2 = (p.to(xs.dtype) for p in (self.w1, self.b1, self.w2, self.b2))
        # grouped_mm takes no bias on CPU: add each row's expert bias, gathered by the row's expert id.
        expert_of_row = torch.repeat_interleave(
            torch.arange(self.num_experts, device=xs.device), counts
        )  # [S]
        h = self._act(_grouped_mm(xs, w1, offs) + b1[expert_of_row])  # [S, h]
        return _grouped_mm(h, w2, offs) + b2[expert_of_row]


def _grouped_mm(x: Tensor, w: Tensor, offs: Tensor) -> Tensor:
    if hasattr(F, "grouped_mm"):
        return F.grouped_mm(x, w, offs=offs)
    return torch._grouped_mm(x, w, offs=offs)


def grouped_mm_unavailable_reason(x: Tensor, experts: Experts) -> str | None:
    """Why torch's grouped GEMM cannot run on these tensors, or None when it can."""
    if not (hasattr(F, "grouped_mm") or hasattr(torch, "_grouped_mm")):
        return f"torch {torch.__version__} has neither torch.nn.functional.grouped_mm nor torch._grouped_mm"
    if x.device.type == "cuda":
        if torch.cuda.get_device_capability(x.device) < (8, 0):
            cap = torch.cuda.get_device_capability(x.device)
            return f"grouped_mm needs a CUDA device of compute capability >= 8.0, got {cap}"
        if x.dtype != torch.bfloat16:  # torch.nn.functional.grouped_mm documents bfloat16 on CUDA
            return f"grouped_mm on CUDA takes bfloat16 only, got {x.dtype}"
    elif x.device.type == "cpu":
        if x.dtype not in (torch.float32, torch.bfloat16, torch.float16):
            return f"grouped_mm on CPU takes float32/bfloat16/float16 only, got {x.dtype}"
    else:
        return f"grouped_mm is used on cuda and cpu only, got {x.device.type}"
    # The kernel needs every row stride to be a multiple of 16 bytes.
    for width in (experts.d_model, experts.hidden):
        if (width * x.element_size()) % 16 != 0:
            return f"grouped_mm needs row strides that are multiples of 16 bytes; width {width} of {x.dtype} is not"
    return None
