"""The transformer the SMoE paper trains on SRAVEN (004, section 2.1 and appendix A.2.1).

Pre-LN blocks without causal mask or absolute positions, T5-style relative position biases in every
layer, attention ``softmax`` or ``hyla`` (Schug et al. 2024, the paper's ref [24]), FFN dense or a sparse
mixture of experts (``worker.core.moe``). Sizes and details follow the reference code (REFERENCE.md,
SRAVEN): emb 128, 4 layers, 16 heads, qk/v dim 64 in total (4 per head), MLP 256 GELU, final LN, input
Dense(8 -> d) on one-hots, output Dense(d -> 8). Read top to bottom: position bias, attention, FFN, block,
config, model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from worker.core.moe import MoEAux, MoEConfig, SparseMoE

NUM_VALUES = 8  # SRAVEN feature values 0..7: one-hot inputs and 8 output classes (REFERENCE.md, SRAVEN)


# --- relative position bias ---------------------------------------------------------------------


def relative_position_bucket(
    relative_position: Tensor, *, bidirectional: bool, num_buckets: int, max_distance: int
) -> Tensor:
    """T5 relative-position buckets (Raffel et al. 2020, section 2.1; the SMoE paper's ref [20]).

    relative_position = key_position - query_position (int tensor). Half the buckets (bidirectional: per
    direction) hold exact distances below ``max_exact``; larger distances share log-spaced buckets up to
    ``max_distance``, beyond which all fall in the last bucket. Returns int64 buckets in [0, num_buckets).
    """
    n = -relative_position
    buckets = torch.zeros_like(n)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (n < 0).long() * num_buckets
        n = n.abs()
    else:
        n = n.clamp(min=0)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    # the float32 eps keeps log(0) away, as T5 does
    log_ratio = torch.log(n.float() / max_exact + torch.finfo(torch.float32).eps) / math.log(
        max_distance / max_exact
    )
    large = max_exact + (log_ratio * (num_buckets - max_exact)).long()
    large = large.clamp(max=num_buckets - 1)
    return buckets + torch.where(is_small, n, large)


class RelativePositionBias(nn.Module):
    """A learned scalar per (head, bucket), added to the attention scores; one per layer (as the
    reference builds it inside every block)."""

    def __init__(self, num_heads: int, num_buckets: int, max_distance: int, bidirectional: bool) -> None:
        super().__init__()
        assert num_buckets <= max_distance, f"num_buckets {num_buckets} > max_distance {max_distance}"
        self.num_buckets, self.max_distance, self.bidirectional = num_buckets, max_distance, bidirectional
        self.embedding = nn.Embedding(num_buckets, num_heads)
        # the reference's embedding init: variance scaling with fan_in = num_heads
        nn.init.normal_(self.embedding.weight, std=num_heads**-0.5)

    def forward(self, T: int) -> Tensor:
        """[H, T, T] bias for a length-T bidirectional sequence."""
        pos = torch.arange(T, device=self.embedding.weight.device)
        buckets = relative_position_bucket(
            pos[None, :] - pos[:, None],  # [T(q), T(k)]: key minus query
            bidirectional=self.bidirectional,
            num_buckets=self.num_buckets,
            max_distance=self.max_distance,
        )
        return self.embedding(buckets).permute(2, 0, 1)  # [T, T, H] -> [H, T, T]


# --- attention --------------------------------------------------------------------------------


def softmax_attention(q: Tensor, k: Tensor, v: Tensor, bias: Tensor) -> Tensor:
    """Multi-head softmax attention, scores q.k/sqrt(d) + bias, no mask (Vaswani et al. 2017, eq. 1).

    q, k: [B, T, H, dk]; v: [B, T, H, dv]; bias: [H, T, T]. Returns [B, T, H, dv].
    """
    out = F.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=bias.to(q.dtype)
    )  # [B, H, T, dv]
    return out.transpose(1, 2)


def hyla_attention(q: Tensor, k: Tensor, v: Tensor, bias: Tensor, eps: float = 1e-6) -> Tensor:
    """Hypernetwork linear attention, HYLA (Schug et al. 2024, "Attention as a hypernetwork", the SMoE
    paper's ref [24]; formula as REFERENCE.md, SRAVEN):

        a[h,q,k]   = q.k / sqrt(dk) + bias[h,q,k]
        a[h,q,k]  <- a[h,q,k] / sqrt(mean_h a[h,q,k]^2 + eps)    (RMS over heads, no learned scale)
        z[q,k,:]   = ReLU(sum_h a[h,q,k] * v[k,h,:])              (the key's value network, latent a)
        o[q,h,:]   = sum_k a[h,q,k] * z[q,k,:]

    eps = 1e-6 is flax's RMSNorm default, which the reference uses. q, k: [B, T, H, dk]; v: [B, T, H, dv];
    bias: [H, T, T]. Returns [B, T, H, dv].
    """
    dk = q.shape[-1]
    a = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(dk) + bias  # [B, H, T, T]
    a = a * torch.rsqrt(a.pow(2).mean(dim=1, keepdim=True) + eps)  # RMS across heads per (q, k)
    z = F.relu(torch.einsum("bhqk,bkhd->bqkd", a, v))  # [B, T(q), T(k), dv]
    return torch.einsum("bhqk,bqkd->bqhd", a, z)  # [B, T, H, dv]


class MultiHeadAttention(nn.Module):
    """Q, K, V projections (with bias) to ``num_heads`` heads of qk_dim/num_heads and v_dim/num_heads
    features, the attention rule, and an output projection over (head, feature)."""

    def __init__(self, d_model: int, num_heads: int, qk_dim: int, v_dim: int, attention: str) -> None:
        super().__init__()
        assert qk_dim % num_heads == 0 and v_dim % num_heads == 0, (
            f"qk_dim {qk_dim} and v_dim {v_dim} must be divisible by num_heads {num_heads}"
        )
        assert attention in ("softmax", "hyla"), f"unknown attention {attention!r}"
        self.num_heads, self.attention = num_heads, attention
        self.query = nn.Linear(d_model, qk_dim)
        self.key = nn.Linear(d_model, qk_dim)
        self.value = nn.Linear(d_model, v_dim)
        self.out = nn.Linear(v_dim, d_model)

    def forward(self, x: Tensor, bias: Tensor) -> Tensor:
        B, T, _ = x.shape
        H = self.num_heads
        q = self.query(x).view(B, T, H, -1)  # [B, T, H, dk]
        k = self.key(x).view(B, T, H, -1)  # [B, T, H, dk]
        v = self.value(x).view(B, T, H, -1)  # [B, T, H, dv]
        o = softmax_attention(q, k, v, bias) if self.attention == "softmax" else hyla_attention(q, k, v, bias)
        return self.out(o.reshape(B, T, -1))  # [B, T, H*dv] -> [B, T, d]


# --- feed-forward -----------------------------------------------------------------------------


class DenseFFN(nn.Module):
    """The reference's MlpBlock (SMoE paper, Listing 1 lines 1-14): Dense, GELU, Dense. flax's ``nn.gelu``
    defaults to the tanh approximation, which we keep."""

    def __init__(self, d_model: int, hidden: int) -> None:
        super().__init__()
        self.up = nn.Linear(d_model, hidden)
        self.down = nn.Linear(hidden, d_model)

    def forward(self, x: Tensor) -> Tensor:
        return self.down(F.gelu(self.up(x), approximate="tanh"))


# --- block ------------------------------------------------------------------------------------


class Block(nn.Module):
    """Pre-LN block: x + Attn(LN(x)), then x + FFN(LN(x)) (the reference's "default" block type)."""

    def __init__(self, cfg: SravenTransformerConfig) -> None:
        super().__init__()
        self.rel_bias = RelativePositionBias(
            cfg.num_heads, cfg.rel_num_buckets, cfg.rel_max_distance, cfg.rel_bidirectional
        )
        self.ln_attn = nn.LayerNorm(cfg.d_model, eps=cfg.ln_eps)
        self.attn = MultiHeadAttention(cfg.d_model, cfg.num_heads, cfg.qk_dim, cfg.v_dim, cfg.attention)
        self.ln_ffn = nn.LayerNorm(cfg.d_model, eps=cfg.ln_eps)
        self.ffn: nn.Module = (
            SparseMoE(cfg.moe) if cfg.moe is not None else DenseFFN(cfg.d_model, cfg.mlp_hidden)
        )

    def forward(self, x: Tensor) -> tuple[Tensor, MoEAux | None]:
        x = x + self.attn(self.ln_attn(x), self.rel_bias(x.shape[1]))
        h = self.ln_ffn(x)
        if isinstance(self.ffn, SparseMoE):
            y, moe_aux = self.ffn(h)
            return x + y, moe_aux
        return x + self.ffn(h), None


# --- config and model -------------------------------------------------------------------------


@dataclass
class SravenTransformerConfig:
    # REFERENCE.md (SRAVEN): emb 128, 4 layers, 16 heads, qk/v dim 64 (in total over heads), MLP 256.
    d_model: int = 128
    num_layers: int = 4
    num_heads: int = 16
    qk_dim: int = 64
    v_dim: int = 64
    mlp_hidden: int = 256  # dense FFN width; a MoE's experts take theirs from ``moe.expert_hidden``
    # "softmax" or "hyla": the paper's two attention variants (004, sections 2.1.1 and 2.1.3).
    attention: Literal["softmax", "hyla"] = "softmax"
    # The reference sets num_buckets = max_distance = the sequence length (9*M, 36 at M=4).
    rel_num_buckets: int = 36
    rel_max_distance: int = 36
    # No causal mask, so both directions get their own buckets (our choice: the reference's T5 module is
    # called with its default, unidirectional, which maps every later key to bucket 0).
    rel_bidirectional: bool = True
    ln_eps: float = 1e-6  # flax's LayerNorm default, which the reference uses
    # None = dense FFN; a config = sparse mixture of experts in every block (004, section 2.1).
    moe: MoEConfig | None = field(default=None)

    def __post_init__(self) -> None:
        assert self.attention in ("softmax", "hyla"), f"unknown attention {self.attention!r}"
        assert self.moe is None or self.moe.d_model == self.d_model, (
            f"moe.d_model {self.moe.d_model if self.moe else None} != d_model {self.d_model}"
        )


@dataclass
class SravenAux:
    """Auxiliary outputs of a forward pass: the CE part of the loss, the summed MoE load-balancing loss,
    and every MoE layer's ``MoEAux`` (empty for a dense FFN)."""

    ce_loss: Tensor | None
    load_balance_loss: Tensor | None
    moe: list[MoEAux]


def _lecun_normal_(linear: nn.Linear) -> None:
    """flax's Dense init, which the reference uses: truncated-normal kernel with variance 1/fan_in, zero
    bias (the 0.8796 corrects the std for the truncation at 2 std)."""
    std = linear.in_features**-0.5 / 0.87962566103423978
    nn.init.trunc_normal_(linear.weight, std=std, a=-2 * std, b=2 * std)
    if linear.bias is not None:
        nn.init.zeros_(linear.bias)


class SravenTransformer(nn.Module):
    def __init__(self, cfg: SravenTransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Linear(NUM_VALUES, cfg.d_model)  # Dense(8 -> d) on one-hot tokens
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.num_layers))
        self.ln_final = nn.LayerNorm(cfg.d_model, eps=cfg.ln_eps)
        self.head = nn.Linear(cfg.d_model, NUM_VALUES)  # Dense(8): logits over the 8 values
        # the MoE layer initialises its own parameters
        moe_modules = {
            id(m) for block in self.blocks if isinstance(block.ffn, SparseMoE) for m in block.ffn.modules()
        }
        for module in self.modules():
            if isinstance(module, nn.Linear) and id(module) not in moe_modules:
                _lecun_normal_(module)

    def forward(
        self, tokens: Tensor, targets: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None, SravenAux]:
        """tokens: [B, T, 8] one-hot (query tokens zero); targets: [B, M] values of the query panel, the
        last M tokens. Returns logits [B, T, 8] at every position (the query panel's are ``[:, -M:]``),
        the loss (None without targets) and the auxiliaries.

        loss = mean softmax cross-entropy over the B*M query tokens (REFERENCE.md, SRAVEN) + the MoE layers'
        load-balancing losses (each already weighted by its ``load_balance_coef``; zero by default).
        """
        V = tokens.shape[-1]  # tokens: [B, T, V]
        assert V == NUM_VALUES, f"tokens must be one-hot over {NUM_VALUES} values, got last dim {V}"
        x = self.embed(tokens)  # [B, T, d]
        moe_aux: list[MoEAux] = []
        for block in self.blocks:
            x, aux = block(x)
            if aux is not None:
                moe_aux.append(aux)
        logits = self.head(self.ln_final(x))  # [B, T, 8]
        load_balance = torch.stack([a.load_balance_loss for a in moe_aux]).sum() if moe_aux else None
        if targets is None:
            return logits, None, SravenAux(None, load_balance, moe_aux)
        M = targets.shape[-1]
        ce = query_cross_entropy(logits[:, -M:], targets)
        loss = ce if load_balance is None else ce + load_balance
        return logits, loss, SravenAux(ce, load_balance, moe_aux)


def query_cross_entropy(query_logits: Tensor, targets: Tensor) -> Tensor:
    """Softmax cross-entropy over the 8 values, mean over the B*M query tokens (REFERENCE.md, SRAVEN).

    query_logits: [B, M, 8]; targets: [B, M] long. Computed in float32 even under bf16 autocast.
    """
    return F.cross_entropy(query_logits.float().reshape(-1, NUM_VALUES), targets.reshape(-1))
