"""SRAVEN transformer: T5 buckets, HYLA and softmax attention against independent formulations, the
forward contract with dense and MoE FFNs."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from worker.core.moe import MoEConfig
from worker.core.sraven.model import (
    SravenTransformer,
    SravenTransformerConfig,
    hyla_attention,
    relative_position_bucket,
    softmax_attention,
)

pytestmark = pytest.mark.usefixtures("one_thread")


def t5_bucket_reference(
    relative_position: int, bidirectional: bool, num_buckets: int, max_distance: int
) -> int:
    """T5's bucketing written out for one integer (Raffel et al. 2020, section 2.1), in float64."""
    bucket = 0
    n = -relative_position
    if bidirectional:
        num_buckets //= 2
        if n < 0:
            bucket += num_buckets
        n = abs(n)
    else:
        n = max(n, 0)
    max_exact = num_buckets // 2
    if n < max_exact:
        return bucket + n
    large = max_exact + int(
        math.log(n / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    )
    return bucket + min(large, num_buckets - 1)


@pytest.mark.parametrize(
    ("bidirectional", "num_buckets", "max_distance"),
    [(True, 36, 36), (False, 36, 36), (True, 18, 18), (True, 72, 72), (True, 32, 128), (False, 32, 128)],
)
def test_relative_position_buckets_match_t5(bidirectional: bool, num_buckets: int, max_distance: int) -> None:
    T = 200
    pos = torch.arange(T)
    rel = pos[None, :] - pos[:, None]
    got = relative_position_bucket(
        rel, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    expected = torch.tensor(
        [
            [t5_bucket_reference(k - q, bidirectional, num_buckets, max_distance) for k in range(T)]
            for q in range(T)
        ]
    )
    assert torch.equal(got, expected)
    assert int(got.min()) >= 0 and int(got.max()) < num_buckets


def hyla_reference(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor, eps: float
) -> torch.Tensor:
    """HYLA as REFERENCE.md states it, one (batch, query, key) at a time with explicit head sums."""
    B, T, H, dk = q.shape
    dv = v.shape[-1]
    out = torch.zeros(B, T, H, dv, dtype=q.dtype)
    for b in range(B):
        a = torch.empty(H, T, T, dtype=q.dtype)
        for h in range(H):
            a[h] = q[b, :, h] @ k[b, :, h].T / math.sqrt(dk) + bias[h]
        a = a / torch.sqrt((a**2).sum(0) / H + eps)  # RMS over heads, no scale
        for qi in range(T):
            for ki in range(T):
                z = torch.zeros(dv, dtype=q.dtype)
                for h in range(H):
                    z += a[h, qi, ki] * v[b, ki, h]
                z = F.relu(z)  # [dv]
                for h in range(H):
                    out[b, qi, h] += a[h, qi, ki] * z
    return out


def test_hyla_equals_an_independent_formulation() -> None:
    g = torch.Generator().manual_seed(0)
    B, T, H, dk, dv = 2, 5, 3, 4, 6
    q, k = (
        torch.randn(B, T, H, dk, generator=g, dtype=torch.float64),
        torch.randn(B, T, H, dk, generator=g, dtype=torch.float64),
    )
    v = torch.randn(B, T, H, dv, generator=g, dtype=torch.float64)
    bias = torch.randn(H, T, T, generator=g, dtype=torch.float64)
    got = hyla_attention(q, k, v, bias, eps=1e-6)
    torch.testing.assert_close(got, hyla_reference(q, k, v, bias, eps=1e-6), rtol=1e-10, atol=1e-10)


def test_softmax_attention_equals_an_independent_formulation() -> None:
    g = torch.Generator().manual_seed(1)
    B, T, H, dk, dv = 2, 7, 4, 3, 5
    q, k = (
        torch.randn(B, T, H, dk, generator=g, dtype=torch.float64),
        torch.randn(B, T, H, dk, generator=g, dtype=torch.float64),
    )
    v = torch.randn(B, T, H, dv, generator=g, dtype=torch.float64)
    bias = torch.randn(H, T, T, generator=g, dtype=torch.float64)
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(dk) + bias
    expected = torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v)
    torch.testing.assert_close(softmax_attention(q, k, v, bias), expected, rtol=1e-10, atol=1e-10)


def tiny(attention: str, moe: MoEConfig | None = None) -> SravenTransformer:
    torch.manual_seed(0)
    cfg = SravenTransformerConfig(
        d_model=32,
        num_layers=2,
        num_heads=4,
        qk_dim=16,
        v_dim=16,
        mlp_hidden=64,
        attention=attention,  # type: ignore[arg-type]
        rel_num_buckets=18,
        rel_max_distance=18,
        moe=moe,
    )
    return SravenTransformer(cfg)


def test_reference_defaults() -> None:
    cfg = SravenTransformerConfig()
    assert (cfg.d_model, cfg.num_layers, cfg.num_heads, cfg.qk_dim, cfg.v_dim, cfg.mlp_hidden) == (
        128,
        4,
        16,
        64,
        64,
        256,
    )
    assert (cfg.rel_num_buckets, cfg.attention, cfg.moe) == (36, "softmax", None)


@pytest.mark.parametrize("attention", ["softmax", "hyla"])
def test_forward_dense_returns_logits_loss_and_no_moe_aux(attention: str) -> None:
    model = tiny(attention)
    tokens = F.one_hot(torch.randint(0, 8, (3, 18)), 8).float()
    tokens[:, -2:] = 0
    targets = torch.randint(0, 8, (3, 2))
    logits, loss, aux = model(tokens, targets)
    assert logits.shape == (3, 18, 8)
    assert loss is not None and aux.ce_loss is not None
    torch.testing.assert_close(loss, F.cross_entropy(logits[:, -2:].reshape(-1, 8), targets.reshape(-1)))
    assert aux.moe == [] and aux.load_balance_loss is None
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())
    logits2, loss2, _ = model(tokens)
    assert loss2 is None and torch.equal(logits2, logits)


@pytest.mark.parametrize("attention", ["softmax", "hyla"])
def test_forward_moe_adds_the_load_balancing_losses(attention: str) -> None:
    moe = MoEConfig(d_model=32, num_experts=4, top_k=2, expert_hidden=16, load_balance_coef=0.01)
    model = tiny(attention, moe)
    tokens = F.one_hot(torch.randint(0, 8, (5, 18)), 8).float()
    targets = torch.randint(0, 8, (5, 2))
    _, loss, aux = model(tokens, targets)
    assert loss is not None and aux.ce_loss is not None and aux.load_balance_loss is not None
    assert len(aux.moe) == 2
    assert all(int(a.tokens_per_expert.sum()) == 5 * 18 * 2 for a in aux.moe)
    expected_lb = sum(a.load_balance_loss for a in aux.moe)
    torch.testing.assert_close(aux.load_balance_loss, expected_lb)
    torch.testing.assert_close(loss, aux.ce_loss + expected_lb)
    assert float(aux.load_balance_loss.detach()) > 0
