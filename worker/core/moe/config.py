"""Configuration of the sparse mixture-of-experts layer (SMoE paper, section 2.1 and appendix A.2.1)."""

from __future__ import annotations

from dataclasses import dataclass

ACTIVATIONS = ("gelu", "relu", "swiglu")
DISPATCHES = ("sorted", "grouped_mm", "dense")


@dataclass
class MoEConfig:
    d_model: int
    # E: the SMoE paper trains on SRAVEN with 8 parallel homogeneous experts (section 2.1).
    num_experts: int = 8
    # k in 1..E; the paper's experiment sweeps it. The module's `top_k` attribute may be changed later.
    top_k: int = 2
    # Width of each expert's 2-layer MLP; 256 is the SRAVEN reference's MLP width (REFERENCE.md).
    expert_hidden: int = 256
    # "gelu" | "relu": the paper's 2-matrix MLP with biases (Listing 1, MlpBlock);
    # "swiglu": 3 matrices, no biases, silu(x W_gate) * (x W_up) W_down, as Mixtral's experts.
    activation: str = "gelu"
    # Weight of the Switch Transformer load-balancing loss (Fedus et al. 2021, eq. 4); the paper uses none.
    load_balance_coef: float = 0.0
    # Std of gaussian noise added to the router logits in training mode only; the paper uses none.
    router_noise: float = 0.0
    # "sorted": sort (token, expert) pairs by expert, one GEMM pair per expert on its contiguous slice;
    # "grouped_mm": the same order, one torch grouped GEMM per projection (falls back to "sorted" with a
    # warning where the kernel cannot run); "dense": Listing 1 literally (reference, E times the work).
    dispatch: str = "sorted"
    # Three levers of the "sorted" dispatch, each switchable so bench/moe_layer.py measures it as an ablation
    # (outputs equal to Listing 1 either way; tests/worker/core/moe/test_moe_levers.py):
    # swiglu only: gate and up stored as one [E, 2h, d] weight applied as x @ W.T (HF Mixtral's layout, one
    # GEMM per expert) instead of two [E, d, h] weights; either layout's state dict loads into either.
    fused_gate_up: bool = True
    # combine the expert outputs with the routing weights folded into one sparse [N, N*k] x [N*k, d] product
    # (CPU float32/float64; elsewhere the unfolded path), instead of a weighted copy of the rows then index_add_.
    fold_routing_weight: bool = True
    # run each projection as one bmm over experts, every expert's rows padded to the busiest expert's count,
    # instead of one GEMM per expert on its slice (one large parallel region per projection).
    padded_bmm: bool = True
    # ...but only when the padding adds at most this fraction of rows (E * busiest / (N * k) - 1): a padded
    # row costs a full row of every GEMM and elementwise op, so with uneven routing (7.8% of pads at k = 1 in
    # bench/moe_layer.py, 0 at k = E) the per-expert slices are cheaper. inf: always pad when padded_bmm.
    pad_max_waste: float = 0.01

    def __post_init__(self) -> None:
        if self.d_model < 1 or self.expert_hidden < 1:
            raise ValueError(
                f"d_model and expert_hidden must be >= 1, got {self.d_model}, {self.expert_hidden}"
            )
        if self.num_experts < 1:
            raise ValueError(f"num_experts must be >= 1, got {self.num_experts}")
        if not 1 <= self.top_k <= self.num_experts:
            raise ValueError(f"top_k must be in 1..{self.num_experts}, got {self.top_k}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.dispatch not in DISPATCHES:
            raise ValueError(f"dispatch must be one of {DISPATCHES}, got {self.dispatch!r}")
        if not self.pad_max_waste >= 0:  # also refuses NaN
            raise ValueError(f"pad_max_waste must be >= 0, got {self.pad_max_waste}")
        if self.load_balance_coef < 0 or self.router_noise < 0:
            raise ValueError(
                f"load_balance_coef and router_noise must be >= 0, got {self.load_balance_coef}, {self.router_noise}"
            )
