"""SparseMoE against the dense reference of Listing 1 and against per-token computations (float64, tiny)."""

from __future__ import annotations

import math
import warnings

import pytest
import torch

from worker.core.moe import MoEConfig, SparseMoE, dense_masked_moe, sorted_moe
from worker.core.moe.experts import grouped_mm_unavailable_reason

D, H, E = 6, 10, 5


def _moe(
    activation: str = "gelu",
    k: int = 2,
    dtype: torch.dtype = torch.float64,
    dispatch: str = "sorted",
    load_balance_coef: float = 0.0,
    router_noise: float = 0.0,
    **levers: bool | float,
) -> SparseMoE:
    """A tiny layer, seeded, expert biases randomised; ``levers``: the sorted dispatch's switches
    (padded_bmm, fold_routing_weight, fused_gate_up; test_moe_levers.py)."""
    torch.manual_seed(0)
    cfg = MoEConfig(
        d_model=D,
        num_experts=E,
        top_k=k,
        expert_hidden=H,
        activation=activation,
        load_balance_coef=load_balance_coef,
        router_noise=router_noise,
        dispatch=dispatch,
        **levers,
    )
    moe = SparseMoE(cfg)
    with torch.no_grad():  # biases start at zero (flax init): randomise them so they are tested too
        for name, p in moe.named_parameters():
            if name.startswith("experts.b"):
                p.normal_()
    return moe.to(dtype)


def _x(dtype: torch.dtype = torch.float64) -> torch.Tensor:
    return torch.randn(3, 4, D, generator=torch.Generator().manual_seed(1), dtype=dtype)


def _gelu_tanh(v: float) -> float:
    return 0.5 * v * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v**3)))


def _naive_expert(moe: SparseMoE, e: int, x: list[float]) -> list[float]:
    """One expert on one token with python floats: Listing 1 MlpBlock (or Mixtral's SwiGLU)."""
    ex = moe.experts

    def lin(v: list[float], w: torch.Tensor, b: torch.Tensor | None) -> list[float]:
        out = [sum(v[i] * w[i, j].item() for i in range(len(v))) for j in range(w.shape[1])]
        return out if b is None else [o + b[j].item() for j, o in enumerate(out)]

    if ex.activation == "swiglu":
        w_gate, w_up, w_down = ex.swiglu_weights()  # [E, d, h], [E, d, h], [E, h, d] in either layout
        g = lin(x, w_gate[e], None)
        u = lin(x, w_up[e], None)
        return lin([gi / (1 + math.exp(-gi)) * ui for gi, ui in zip(g, u)], w_down[e], None)
    act = _gelu_tanh if ex.activation == "gelu" else (lambda v: max(v, 0.0))
    return lin([act(v) for v in lin(x, ex.w1[e], ex.b1[e])], ex.w2[e], ex.b2[e])


def _grads(moe: SparseMoE, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    x = x.detach().requires_grad_(True)
    y, _ = moe(x)
    probe = torch.randn(y.shape, generator=torch.Generator().manual_seed(2), dtype=y.dtype)
    params = list(moe.parameters())
    grads = torch.autograd.grad((y * probe).sum(), [x, *params], allow_unused=True)
    return y.detach(), [g if g is not None else torch.zeros_like(p) for g, p in zip(grads, [x, *params])]


@pytest.mark.parametrize("activation", ["gelu", "relu", "swiglu"])
def test_dense_reference_matches_per_token_python_loop(activation: str) -> None:
    moe = _moe(activation, k=2)
    x = _x().reshape(-1, D)
    _, aux = moe(x)
    y = dense_masked_moe(x, moe.experts, aux.selected_experts, aux.routing_weights)
    for n in range(x.shape[0]):
        expected = [0.0] * D
        for e, w in zip(aux.selected_experts[n].tolist(), aux.routing_weights[n].tolist()):
            expected = [a + w * b for a, b in zip(expected, _naive_expert(moe, e, x[n].tolist()))]
        assert y[n].tolist() == pytest.approx(expected, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("activation", ["gelu", "relu", "swiglu"])
@pytest.mark.parametrize("k", range(1, E + 1))
def test_sorted_dispatch_equals_dense_reference_in_output_and_all_gradients(activation: str, k: int) -> None:
    moe = _moe(activation, k=k)
    y_sorted, g_sorted = _grads(moe, _x())
    moe.cfg.dispatch = "dense"
    y_dense, g_dense = _grads(moe, _x())
    torch.testing.assert_close(y_sorted, y_dense, rtol=1e-12, atol=1e-12)
    names = ["x", *(n for n, _ in moe.named_parameters())]
    for name, a, b in zip(names, g_sorted, g_dense):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12, msg=f"gradient of {name} differs")


@pytest.mark.parametrize("activation", ["gelu", "swiglu"])
@pytest.mark.parametrize("k", [1, 3])
def test_grouped_mm_dispatch_equals_dense_reference_in_float32(activation: str, k: int) -> None:
    torch.manual_seed(0)
    moe = SparseMoE(MoEConfig(d_model=8, num_experts=4, top_k=k, expert_hidden=16, activation=activation))
    moe.cfg.dispatch = "grouped_mm"
    x = torch.randn(2, 5, 8)
    reason = grouped_mm_unavailable_reason(x, moe.experts)
    if reason is not None:
        pytest.skip(reason)
    y_g, g_g = _grads(moe, x)
    assert moe.last_dispatch == "grouped_mm"
    moe.cfg.dispatch = "dense"
    y_d, g_d = _grads(moe, x)
    torch.testing.assert_close(y_g, y_d, rtol=1e-5, atol=1e-5)
    for a, b in zip(g_g, g_d):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_grouped_mm_falls_back_to_sorted_with_a_reason_for_float64() -> None:
    moe = _moe(dispatch="grouped_mm")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y, _ = moe(_x())
    assert moe.last_dispatch == "sorted"
    assert any("falls back to 'sorted'" in str(w.message) and "float64" in str(w.message) for w in caught)
    moe.cfg.dispatch = "dense"
    torch.testing.assert_close(y, moe(_x())[0])


@pytest.mark.parametrize("activation", ["gelu", "swiglu"])
def test_k_equal_to_num_experts_is_the_dense_softmax_mixture(activation: str) -> None:
    moe = _moe(activation, k=E)
    x = _x().reshape(-1, D)
    y, _ = moe(x)
    probs = torch.softmax(x @ moe.router.weight.T, dim=-1)  # [N, E], no top-k at all
    expected = sum(probs[:, e : e + 1] * moe.experts.forward_one(x, e) for e in range(E))
    torch.testing.assert_close(y, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("k", range(1, E + 1))
def test_aux_shapes_and_tokens_per_expert_sums_to_n_times_k(k: int) -> None:
    moe = _moe(k=k)
    x = _x()
    y, aux = moe(x)
    N = x.shape[0] * x.shape[1]
    assert y.shape == x.shape
    assert aux.router_logits.shape == (N, E)
    assert aux.selected_experts.shape == (N, k) and aux.selected_experts.dtype == torch.long
    assert aux.routing_weights.shape == (N, k)
    torch.testing.assert_close(aux.routing_weights.sum(-1), torch.ones(N, dtype=torch.float64))
    assert aux.tokens_per_expert.dtype == torch.long and aux.tokens_per_expert.shape == (E,)
    assert int(aux.tokens_per_expert.sum()) == N * k
    assert 0 <= aux.routing_entropy.item() <= math.log(E) + 1e-9
    assert aux.load_balance_loss.shape == () and aux.load_balance_loss.item() == 0.0


def test_load_balance_loss_in_aux_has_coef_applied_and_reaches_the_router() -> None:
    moe = _moe(k=2, load_balance_coef=0.01)
    _, aux = moe(_x())
    E_ = moe.cfg.num_experts
    f = aux.tokens_per_expert.double() / aux.selected_experts.numel()
    P = torch.softmax(aux.router_logits.detach(), dim=-1).mean(0)
    assert aux.load_balance_loss.detach().item() == pytest.approx(0.01 * E_ * float((f * P).sum()), rel=1e-12)
    aux.load_balance_loss.backward()
    assert moe.router.weight.grad is not None and moe.router.weight.grad.abs().sum() > 0


def test_top_k_can_be_changed_after_construction() -> None:
    moe = _moe(k=2)
    x = _x()
    for k in (1, 4, E):
        moe.top_k = k
        y, aux = moe(x)
        assert aux.selected_experts.shape[1] == k
        assert int(aux.tokens_per_expert.sum()) == x.shape[0] * x.shape[1] * k
        fresh = _moe(k=k)  # same seed, so the same weights, built with this k
        torch.testing.assert_close(y, fresh(x)[0])
    moe.top_k = E + 1
    with pytest.raises(ValueError, match="top_k"):
        moe(x)


def test_router_noise_only_in_training_mode() -> None:
    moe = _moe(k=2, router_noise=1.0)
    x = _x()
    clean = x.reshape(-1, D) @ moe.router.weight.T
    moe.eval()
    _, aux_a = moe(x)
    _, aux_b = moe(x)
    torch.testing.assert_close(aux_a.router_logits, clean)
    torch.testing.assert_close(aux_b.router_logits, clean)
    moe.train()
    _, aux_c = moe(x)
    _, aux_d = moe(x)
    assert not torch.allclose(aux_c.router_logits, clean)
    assert not torch.allclose(aux_c.router_logits, aux_d.router_logits)
    moe_quiet = _moe(k=2)
    moe_quiet.train()
    torch.testing.assert_close(moe_quiet(x)[1].router_logits, clean)


def test_config_rejects_invalid_values() -> None:
    with pytest.raises(ValueError, match="top_k"):
        MoEConfig(d_model=4, num_experts=4, top_k=5)
    with pytest.raises(ValueError, match="activation"):
        MoEConfig(d_model=4, activation="tanh")
    with pytest.raises(ValueError, match="dispatch"):
        MoEConfig(d_model=4, dispatch="scatter")


def test_swiglu_equals_huggingface_mixtral_block_with_copied_weights() -> None:
    from transformers import MixtralConfig
    from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock

    k = 2
    moe = _moe("swiglu", k=k, dtype=torch.float32)
    config = MixtralConfig(
        hidden_size=D,
        intermediate_size=H,
        num_local_experts=E,
        num_experts_per_tok=k,
    )
    config._experts_implementation = "eager"  # HF's python loop over the hit experts
    block = MixtralSparseMoeBlock(config).eval()
    with torch.no_grad():
        block.gate.weight.copy_(moe.router.weight)
        # Mixtral: gate_up_proj [E, 2h, d] (gate rows first), down_proj [E, d, h], used as x @ W.T
        w_gate, w_up, _ = moe.experts.swiglu_weights()
        block.experts.gate_up_proj.copy_(torch.cat([w_gate, w_up], dim=2).transpose(1, 2))
        block.experts.down_proj.copy_(moe.experts.w_down.transpose(1, 2))
    x = _x(torch.float32)
    torch.testing.assert_close(moe(x)[0], block(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("activation", ["gelu", "relu", "swiglu"])
def test_sorted_dispatch_with_an_unused_expert_gives_it_exactly_zero_gradient(activation: str) -> None:
    moe = _moe(activation, k=2)
    x = _x().reshape(-1, D)
    N = x.shape[0]
    # Hand-made routing that never picks expert 2 (and gives expert 0 a single row).
    selected = torch.tensor([[1, 3]] * (N - 1) + [[0, 4]])
    weights = torch.softmax(torch.randn(N, 2, dtype=torch.float64), dim=-1)
    probe = torch.randn(N, D, dtype=torch.float64)
    params = list(moe.experts.parameters())

    def grads(fn: object) -> list[torch.Tensor]:
        xg, wg = x.clone().requires_grad_(True), weights.clone().requires_grad_(True)
        y = fn(xg, moe.experts, selected, wg)  # type: ignore[operator]
        return list(torch.autograd.grad((y * probe).sum(), [xg, wg, *params]))

    for a, b in zip(grads(sorted_moe), grads(dense_masked_moe)):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    unused = [g[2] for g in grads(sorted_moe)[2:]]
    assert all(bool((g == 0).all()) for g in unused)


@pytest.mark.parametrize("activation", ["gelu", "swiglu"])
def test_sorted_dispatch_passes_numerical_gradcheck(activation: str) -> None:
    moe = _moe(activation, k=2)
    x = _x()[0].clone().requires_grad_(True)  # [4, D]
    _, aux = moe(x)
    weights = aux.routing_weights.detach().clone().requires_grad_(True)
    selected = aux.selected_experts
    names = [f"experts.{n}" for n, _ in moe.experts.named_parameters()]

    class Wrapped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.experts = moe.experts

        def forward(self, xx: torch.Tensor, ww: torch.Tensor) -> torch.Tensor:
            return sorted_moe(xx, self.experts, selected, ww)

    wrapped = Wrapped()

    def fn(xx: torch.Tensor, ww: torch.Tensor, *ps: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(wrapped, dict(zip(names, ps)), (xx, ww))

    inputs = (x, weights, *(p.detach().clone().requires_grad_(True) for p in moe.experts.parameters()))
    # fast mode checks v^T J u for random u, v against the same finite differences: a wrong gradient of any
    # input or parameter shows with probability 1, at the cost of a few passes instead of one per entry of
    # every expert's weights (thousands of forward passes in double, minutes on two cores)
    assert torch.autograd.gradcheck(fn, inputs, fast_mode=True)


@pytest.mark.parametrize("activation", ["gelu", "swiglu"])
def test_bf16_activations_under_autocast_with_fp32_weights_agree_across_dispatches(activation: str) -> None:
    outs = {}
    for dispatch in ("sorted", "grouped_mm", "dense"):
        torch.manual_seed(0)
        moe = SparseMoE(
            MoEConfig(d_model=16, num_experts=4, top_k=2, expert_hidden=32, activation=activation)
        )
        moe.cfg.dispatch = dispatch
        x = torch.randn(10, 16, generator=torch.Generator().manual_seed(3)).bfloat16().requires_grad_(True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y, aux = moe(x)
        y.float().sum().backward()
        assert y.dtype == torch.bfloat16 and aux.router_logits.dtype == torch.float32
        assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in moe.parameters())
        outs[dispatch] = y.float()
    torch.testing.assert_close(outs["sorted"], outs["dense"], rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(outs["grouped_mm"], outs["dense"], rtol=2e-2, atol=2e-2)
