"""The sorted dispatch's three levers (padded bmm, routing weight folded into the combine, fused gate-up)
in every combination against the dense formulation of the SMoE paper (004), appendix A.2.1, Listing 1
lines 33-53: y[n] = sum_j softmax(top-k logits)[n, j] * expert_{e_j}(x[n]). Float64, tiny tensors,
forward and every gradient (input, routing weights, each parameter)."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from tests.worker.core.moe.test_moe_layer import D, E, H
from tests.worker.core.moe.test_moe_layer import _moe as layer_moe
from worker.core.moe import MoEConfig, SparseMoE, dense_masked_moe, sorted_moe
from worker.core.moe.experts import Experts

LEVERS = list(itertools.product([False, True], repeat=3))  # (padded_bmm, fold_routing_weight, fused_gate_up)


def _moe(activation: str, k: int, padded: bool, fold: bool, fused: bool) -> SparseMoE:
    """padded: always the padded layout, however many pads (pad_max_waste inf), so it is what is tested."""
    return layer_moe(
        activation,
        k,
        padded_bmm=padded,
        fold_routing_weight=fold,
        fused_gate_up=fused,
        pad_max_waste=math.inf,
    )


def _x() -> torch.Tensor:
    return torch.randn(3, 7, D, generator=torch.Generator().manual_seed(1), dtype=torch.float64)


def _grads(moe: SparseMoE, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    x = x.detach().requires_grad_(True)
    y, _ = moe(x)
    probe = torch.randn(y.shape, generator=torch.Generator().manual_seed(2), dtype=y.dtype)
    params = list(moe.parameters())
    grads = torch.autograd.grad((y * probe).sum(), [x, *params], allow_unused=True)
    return y.detach(), [g if g is not None else torch.zeros_like(p) for g, p in zip(grads, [x, *params])]


@pytest.mark.parametrize(("padded", "fold", "fused"), LEVERS)
@pytest.mark.parametrize("activation", ["gelu", "relu", "swiglu"])
@pytest.mark.parametrize("k", [1, 2, 4, E])
def test_every_lever_combination_equals_listing_1_dense_in_output_and_all_gradients(
    activation: str, k: int, padded: bool, fold: bool, fused: bool
) -> None:
    # SMoE paper 004, appendix A.2.1, Listing 1 lines 33-53 (dispatch="dense" runs it literally).
    moe = _moe(activation, k, padded, fold, fused)
    y_sorted, g_sorted = _grads(moe, _x())
    moe.cfg.dispatch = "dense"
    y_dense, g_dense = _grads(moe, _x())
    torch.testing.assert_close(y_sorted, y_dense, rtol=1e-12, atol=1e-12)
    names = ["x", *(n for n, _ in moe.named_parameters())]
    for name, a, b in zip(names, g_sorted, g_dense):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12, msg=f"gradient of {name} differs")


@pytest.mark.parametrize(("padded", "fold", "fused"), LEVERS)
@pytest.mark.parametrize("activation", ["gelu", "swiglu"])
def test_routing_weight_gradient_and_unused_expert_with_unbalanced_routing(
    activation: str, padded: bool, fold: bool, fused: bool
) -> None:
    # Listing 1 (appendix A.2.1) lines 33-53 with hand-made routing: expert 2 never chosen, expert 0 on one
    # row, expert 1 on every row (the padded layout pads 4 of the 5 experts' blocks to N rows).
    moe = _moe(activation, 2, padded, fold, fused)
    experts = moe.experts
    x = _x().reshape(-1, D)
    N = x.shape[0]
    selected = torch.tensor([[1, 3]] * (N - 1) + [[0, 1]])
    weights = torch.softmax(torch.randn(N, 2, dtype=torch.float64), dim=-1)
    probe = torch.randn(N, D, dtype=torch.float64)
    params = list(experts.parameters())

    def grads(fn: object, **kw: bool) -> list[torch.Tensor]:
        xg, wg = x.clone().requires_grad_(True), weights.clone().requires_grad_(True)
        y = fn(xg, experts, selected, wg, **kw)  # type: ignore[operator]
        return [y.detach(), *torch.autograd.grad((y * probe).sum(), [xg, wg, *params])]

    ours = grads(sorted_moe, padded=padded, fold=fold)
    for a, b in zip(ours, grads(dense_masked_moe)):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    assert all(bool((g[2] == 0).all()) for g in ours[3:])  # expert 2's parameters: exactly zero gradient


@pytest.mark.parametrize(("padded", "fold"), [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("activation", ["gelu", "swiglu"])
def test_levers_pass_numerical_gradcheck(activation: str, padded: bool, fold: bool) -> None:
    moe = _moe(activation, 2, padded, fold, fused=True)
    x = _x()[0].clone().requires_grad_(True)  # [7, D]
    _, aux = moe(x)
    weights = aux.routing_weights.detach().clone().requires_grad_(True)
    selected = aux.selected_experts
    names = [f"experts.{n}" for n, _ in moe.experts.named_parameters()]

    class Wrapped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.experts = moe.experts

        def forward(self, xx: torch.Tensor, ww: torch.Tensor) -> torch.Tensor:
            return sorted_moe(xx, self.experts, selected, ww, padded=padded, fold=fold)

    wrapped = Wrapped()

    def fn(xx: torch.Tensor, ww: torch.Tensor, *ps: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(wrapped, dict(zip(names, ps)), (xx, ww))

    inputs = (x, weights, *(p.detach().clone().requires_grad_(True) for p in moe.experts.parameters()))
    # fast mode checks v^T J u for random u, v against the same finite differences: a wrong gradient of any
    # input or parameter shows with probability 1, at the cost of a few passes instead of one per entry of
    # every expert's weights (thousands of forward passes in double, minutes on two cores)
    assert torch.autograd.gradcheck(fn, inputs, fast_mode=True)


def test_fused_gate_up_is_hf_mixtral_layout_and_matches_split_on_the_same_weights() -> None:
    # Mixtral's expert (no biases): down(silu(x W_gate) * (x W_up)); fused stores [W_gate^T; W_up^T] [2h, d].
    split = _moe("swiglu", 2, True, True, fused=False)
    fused = _moe("swiglu", 2, True, True, fused=True)
    fused.load_state_dict(split.state_dict())  # the split (pre-fusion) checkpoint layout converts on load
    assert fused.experts.w_gate_up.shape == (E, 2 * H, D)
    torch.testing.assert_close(fused.experts.w_gate_up[:, :H], split.experts.w_gate.transpose(1, 2))
    torch.testing.assert_close(fused.experts.w_gate_up[:, H:], split.experts.w_up.transpose(1, 2))
    y_s, g_s = _grads(split, _x())
    y_f, g_f = _grads(fused, _x())
    torch.testing.assert_close(y_f, y_s, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(g_f[0], g_s[0], rtol=1e-12, atol=1e-12)  # input gradient
    grad_fused = dict(zip(["x", *(n for n, _ in fused.named_parameters())], g_f))
    grad_split = dict(zip(["x", *(n for n, _ in split.named_parameters())], g_s))
    expected = torch.cat([grad_split["experts.w_gate"], grad_split["experts.w_up"]], dim=2).transpose(1, 2)
    torch.testing.assert_close(grad_fused["experts.w_gate_up"], expected, rtol=1e-12, atol=1e-12)


def test_old_split_checkpoint_loads_into_fused_layout_and_back() -> None:
    old = Experts(E, D, H, "swiglu", fused_gate_up=False).double()
    new = Experts(E, D, H, "swiglu", fused_gate_up=True).double()
    state = old.state_dict()
    assert set(state) == {"w_gate", "w_up", "w_down"}
    new.load_state_dict(state)  # strict: converted, nothing missing or unexpected
    assert set(state) == {"w_gate", "w_up", "w_down"}  # the caller's dict is left as it was
    rows = torch.randn(9, D, dtype=torch.float64)
    for e in range(E):
        torch.testing.assert_close(new.forward_one(rows, e), old.forward_one(rows, e), rtol=1e-12, atol=1e-12)
    back = Experts(E, D, H, "swiglu", fused_gate_up=False).double()
    back.load_state_dict(new.state_dict())
    for name in ("w_gate", "w_up", "w_down"):
        assert torch.equal(getattr(back, name), getattr(old, name))
    # Nested under a model (prefixes), as a saved SparseMoE / SRAVEN checkpoint is.
    moe_old = _moe("swiglu", 2, True, True, fused=False)
    moe_new = _moe("swiglu", 2, True, True, fused=True)
    moe_new.load_state_dict(moe_old.state_dict())
    torch.testing.assert_close(moe_new(_x())[0], moe_old(_x())[0], rtol=1e-12, atol=1e-12)


def test_gelu_experts_have_no_gate_up_layout() -> None:
    ex = Experts(E, D, H, "gelu", fused_gate_up=True)
    assert {n for n, _ in ex.named_parameters()} == {"w1", "b1", "w2", "b2"}


@pytest.mark.parametrize("activation", ["gelu", "swiglu"])
def test_bf16_with_every_lever_falls_back_from_the_sparse_combine_and_agrees(activation: str) -> None:
    # The CSR combine runs for CPU float32/float64 only; bf16 takes the index_add_ path and must agree.
    torch.manual_seed(0)
    moe = SparseMoE(MoEConfig(d_model=16, num_experts=4, top_k=2, expert_hidden=32, activation=activation))
    x = torch.randn(10, 16, generator=torch.Generator().manual_seed(3))
    y32 = moe(x)[0]
    y16 = moe.to(torch.bfloat16)(x.bfloat16())[0]
    torch.testing.assert_close(y16.float(), y32, rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize(
    ("counts", "limit", "padded"),
    [
        ([2, 2, 2, 2], 0.01, True),  # balanced: no pads
        ([3, 2, 2, 1], 0.01, False),  # busiest 3 of mean 2: 4 pads on 8 rows (50%) > 1%
        ([3, 2, 2, 1], 0.5, True),  # ... within a 50% limit
        ([3, 2, 2, 1], math.inf, True),
        ([9, 8, 8, 7], 0.10, False),  # 4 pads on 32 rows (12.5%)
        ([9, 8, 8, 7], 0.125, True),
    ],
)
def test_padded_layout_only_when_the_pads_are_within_the_limit(
    counts: list[int], limit: float, padded: bool
) -> None:
    from worker.core.moe.sorted_dispatch import _Plan

    selected = torch.repeat_interleave(torch.arange(len(counts)), torch.tensor(counts))[
        torch.randperm(sum(counts))
    ]
    weights = torch.ones(sum(counts), 1, dtype=torch.float64)
    plan = _Plan(selected[:, None], weights, len(counts), torch.float64, True, True, limit)
    assert plan.padded is padded
    rows = len(counts) * max(counts) if padded else sum(counts)
    assert rows == plan.R
    # padded_bmm off: the sorted rows, however few the pads would be (here inf allows any)
    off = _Plan(selected[:, None], weights, len(counts), torch.float64, False, True, math.inf)
    ends = list(itertools.accumulate(counts))
    assert sum(counts) == off.R
    assert off.blocks() == list(zip([0, *ends[:-1]], ends))  # each expert's slice of the sorted rows
    if padded:  # the padded layout's blocks are M rows each, pads included
        assert plan.blocks() == [(e * max(counts), (e + 1) * max(counts)) for e in range(len(counts))]


def test_the_layer_default_pads_balanced_routing_and_slices_uneven_routing() -> None:
    """MoEConfig's pad_max_waste (1%) reaches the dispatch: outputs equal to Listing 1 either way."""
    assert MoEConfig(d_model=4).pad_max_waste == 0.01
    with pytest.raises(ValueError, match="pad_max_waste"):
        MoEConfig(d_model=4, pad_max_waste=-0.1)
    with pytest.raises(ValueError, match="pad_max_waste"):
        MoEConfig(d_model=4, pad_max_waste=float("nan"))
    for k in (1, E):  # k = E routes every token to every expert: no pads, the padded layout
        moe = layer_moe("gelu", k)
        x = _x()
        y, aux = moe(x)
        ref = dense_masked_moe(x.reshape(-1, D), moe.experts, aux.selected_experts, aux.routing_weights)
        torch.testing.assert_close(y.reshape(-1, D), ref)
