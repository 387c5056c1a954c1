"""Sparse mixture-of-experts layer (SMoE paper 004, section 2.1, appendix A.2.1 Listing 1)."""

from worker.core.moe.config import MoEConfig
from worker.core.moe.dispatch import dense_masked_moe, grouped_moe
from worker.core.moe.experts import Experts
from worker.core.moe.layer import MoEAux, SparseMoE, set_top_k
from worker.core.moe.routing import load_balancing_loss, routing_entropy, top_k_softmax
from worker.core.moe.sorted_dispatch import sorted_moe

__all__ = [
    "Experts",
    "MoEAux",
    "MoEConfig",
    "SparseMoE",
    "dense_masked_moe",
    "grouped_moe",
    "load_balancing_loss",
    "routing_entropy",
    "set_top_k",
    "sorted_moe",
    "top_k_softmax",
]
