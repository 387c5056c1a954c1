"""The "sorted" dispatch: Listing 1's function with each expert run once on the rows routed to it.

y[n] = sum_j routing_weights[n, j] * expert_{selected_experts[n, j]}(x[n])
(SMoE paper 004, appendix A.2.1, Listing 1 lines 33-53), computed as:

1. order the N*k (token, slot) pairs by expert, gather their rows: xs [S = N*k, d], expert e's rows contiguous;
2. per expert, one GEMM pair on its slice, written into preallocated [S, h] / [S, d] buffers, with the
   activation applied once over all S rows;
3. scale each row by its routing weight and index_add it back to its token.

Three switchable levers (MoEConfig; bench/moe_layer.py measures each as an ablation):
- padded: rows laid out [E, M, d], every expert padded to the busiest one's count M, so each projection is
  one `bmm` (one large parallel region) instead of E GEMMs on slices; padded rows carry routing weight 0,
  so they add nothing to y and get zero gradient. Used only when the pads are few (`pad_max_waste`, in
  MoEConfig 1% of the rows): every pad costs a row of each GEMM;
- fold: the routing weights folded into the combine, one sparse [N, R] x [R, d] product (CSR, CPU) that
  scales and scatter-adds in one pass, instead of a weighted copy of the rows then index_add_;
- fused gate-up (swiglu): one [2h, d] weight per expert applied as x @ W.T (HF Mixtral's layout), and the
  expert computed expert by expert (its gate-up GEMM, the silu * up, the down GEMM, then the next expert),
  so each op reads a block its predecessor just wrote, still in cache, and the backward reuses one scratch
  block per expert instead of [N*k, 2h] gradient buffers (`_fused_swiglu_forward` / `_backward`).

Forward and backward are written by hand (a torch.autograd.Function) because the autograd version of the
same loop spends ~15% of its time on copies the hand-written one avoids: concatenating the per-expert
outputs, the backward of `split` (another concatenation), and stacking the per-expert weight gradients.
Here every per-expert result is written in place (`out=`) into one buffer. The gradients are the plain
chain rule of steps 1-3; the tests compare them with autograd through `dense_masked_moe` for every k.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from worker.core.moe.experts import Experts


def sort_by_expert(selected_experts: Tensor, num_experts: int) -> tuple[Tensor, Tensor]:
    """Order the N*k (token, slot) pairs by expert.

    selected_experts [N, k] long. Returns (order [N*k] long: flat pair indices n*k + j grouped by expert,
    stable so tokens stay in order within an expert; counts [E] long).
    """
    flat = selected_experts.reshape(-1)  # [N*k]
    order = torch.argsort(flat, stable=True)  # [N*k]
    counts = torch.bincount(flat, minlength=num_experts)  # [E]
    return order, counts


class _Plan:
    """Where each routed (token, slot) pair lives in the expert-major row layout, and how to combine.

    R rows: S = N*k sorted rows, or E*M padded rows (M = the busiest expert's count, pads at each block's end).
    token_of_row [R] long (pads: token 0), weight_of_row [R] (pads: 0), row_of_pair [N*k] long (row of pair
    n*k + j), bounds: per-expert [lo, hi) row ranges (sorted layout), csr: the weighted combine [N, R] or None.
    """

    def __init__(
        self,
        selected_experts: Tensor,
        routing_weights: Tensor,
        num_experts: int,
        dtype: torch.dtype,
        padded: bool,
        fold: bool,
        pad_max_waste: float = math.inf,
    ) -> None:
        N, k = selected_experts.shape
        S, E = N * k, num_experts
        order, counts = sort_by_expert(selected_experts, E)  # [S], [E]
        count_list = counts.tolist()
        dev = selected_experts.device
        M = max(max(count_list), 1)
        pad_rows = E * M - S
        padded = padded and pad_rows <= S * pad_max_waste
        self.N, self.k, self.E, self.padded = N, k, E, padded
        if padded:
            starts = torch.cumsum(counts, 0) - counts  # [E], first sorted row of each expert
            expert_sorted = selected_experts.reshape(-1).index_select(0, order)  # [S]
            rank = torch.arange(S, device=dev) - starts.index_select(0, expert_sorted)  # [S]
            row_of_sorted = expert_sorted * M + rank  # [S]
            self.R, self.M = E * M, M
        else:
            row_of_sorted = torch.arange(S, device=dev)
            self.R, self.M = S, 0
        self.bounds = _bounds(count_list)
        self.row_of_pair = torch.empty_like(order).index_copy_(0, order, row_of_sorted)  # [S]
        self.token_of_row = torch.zeros(self.R, dtype=torch.long, device=dev).index_copy_(
            0, row_of_sorted, order // k
        )  # [R]
        w_flat = routing_weights.detach().reshape(-1).to(dtype)  # [S], pair order
        self.weight_of_row = w_flat.new_zeros(self.R).index_copy_(0, self.row_of_pair, w_flat)  # [R]
        self.csr: Tensor | None = None
        if fold and dev.type == "cpu" and dtype in (torch.float32, torch.float64):
            # Row n of [N, R] holds token n's k weights at its k rows (columns sorted within the row).
            cols, perm = torch.sort(self.row_of_pair.view(N, k), dim=1)
            vals = w_flat.view(N, k).gather(1, perm)
            crow = torch.arange(0, S + 1, k, device=dev)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "sparse CSR support is in beta"
                self.csr = torch.sparse_csr_tensor(
                    crow, cols.reshape(-1), vals.reshape(-1), size=(N, self.R), check_invariants=False
                )

    def combine(self, ys: Tensor) -> Tensor:
        """y [N, d] = sum over each token's rows of weight * row (Listing 1 line 53's weighted sum)."""
        if self.csr is not None:
            return torch.sparse.mm(self.csr, ys)
        return ys.new_zeros(self.N, ys.shape[1]).index_add_(
            0, self.token_of_row, ys * self.weight_of_row[:, None]
        )

    def uncombine(
        self, grad_y: Tensor, ys: Tensor, need_rw: bool, rw_dtype: torch.dtype
    ) -> tuple[Tensor, Tensor | None]:
        """Backward of `combine`: (dL/d(row) = weight * grad_y[token] [R, d], pads 0; dL/d routing_weights [N, k])."""
        g = grad_y.contiguous().index_select(0, self.token_of_row)  # [R, d], unweighted
        grad_rw = None
        if need_rw:
            if self.csr is not None:  # row dot products without an [R, d] temporary
                rd = torch.bmm(g.unsqueeze(1), ys.unsqueeze(2)).view(-1)  # [R]
            else:
                rd = (g * ys).sum(dim=1)  # [R]
            grad_rw = rd.index_select(0, self.row_of_pair).view(self.N, self.k).to(rw_dtype)
        g.mul_(self.weight_of_row[:, None])  # pads: weight 0, gradient 0
        return g, grad_rw

    def blocks(self) -> list[tuple[int, int]]:
        """Each expert's [lo, hi) rows in this layout (padded: its M rows, pads included)."""
        if self.padded:
            return [(e * self.M, (e + 1) * self.M) for e in range(self.E)]
        return self.bounds

    def mm(self, a: Tensor, w: Tensor, transpose: bool = False, bias: Tensor | None = None) -> Tensor:
        """Each expert's rows times its weight: a [R, i] -> [R, o]; w [E, i, o] (x @ w[e]) or, with
        `transpose`, [E, o, i] (x @ w[e].T); bias [E, o] added per expert."""
        we = w.transpose(1, 2) if transpose else w  # [E, i, o] view
        if self.padded:
            a3 = a.view(self.E, self.M, a.shape[1])
            out = torch.bmm(a3, we) if bias is None else torch.baddbmm(bias[:, None, :], a3, we)
            return out.view(self.R, we.shape[2])
        out = a.new_empty(self.R, we.shape[2])
        for e, (lo, hi) in enumerate(self.bounds):
            if bias is None:
                torch.mm(a[lo:hi], we[e], out=out[lo:hi])
            else:
                torch.addmm(bias[e], a[lo:hi], we[e], out=out[lo:hi])
        return out

    def mm_acc(self, acc: Tensor, a: Tensor, w: Tensor, transpose: bool = False) -> Tensor:
        """acc += per-expert a @ w[e] (or a @ w[e].T), in place."""
        we = w.transpose(1, 2) if transpose else w
        if self.padded:
            acc3 = acc.view(self.E, self.M, acc.shape[1])
            acc3.baddbmm_(a.view(self.E, self.M, a.shape[1]), we)
            return acc
        for e, (lo, hi) in enumerate(self.bounds):
            acc[lo:hi].addmm_(a[lo:hi], we[e])
        return acc

    def wgrad(self, a: Tensor, g: Tensor, transpose: bool = False) -> Tensor:
        """Per-expert weight gradient: a[e]^T g[e] [E, i, o], or with `transpose` g[e]^T a[e] [E, o, i]."""
        if self.padded:
            a3 = a.view(self.E, self.M, a.shape[1])
            g3 = g.view(self.E, self.M, g.shape[1])
            return torch.bmm(g3.transpose(1, 2), a3) if transpose else torch.bmm(a3.transpose(1, 2), g3)
        shape = (self.E, g.shape[1], a.shape[1]) if transpose else (self.E, a.shape[1], g.shape[1])
        out = a.new_empty(shape)
        for e, (lo, hi) in enumerate(self.bounds):
            if transpose:
                torch.mm(g[lo:hi].T, a[lo:hi], out=out[e])
            else:
                torch.mm(a[lo:hi].T, g[lo:hi], out=out[e])
        return out

    def bias_grad(self, g: Tensor) -> Tensor:
        """Per-expert sum of g's rows: [E, o]."""
        if self.padded:
            return g.view(self.E, self.M, g.shape[1]).sum(dim=1)
        out = g.new_empty(self.E, g.shape[1])
        for e, (lo, hi) in enumerate(self.bounds):
            torch.sum(g[lo:hi], dim=0, out=out[e])
        return out

    def scatter_rows(self, grad_xs: Tensor) -> Tensor:
        """Backward of the gather x[token_of_row]: [R, d] -> [N, d] (pads carry zero gradient)."""
        return grad_xs.new_zeros(self.N, grad_xs.shape[1]).index_add_(0, self.token_of_row, grad_xs)


def _bounds(counts: list[int]) -> list[tuple[int, int]]:
    """[lo, hi) row range of each expert's slice in the sorted rows."""
    out, lo = [], 0
    for c in counts:
        out.append((lo, lo + c))
        lo += c
    return out


class _SortedMLP(torch.autograd.Function):
    """Steps 1-3 for the 2-matrix experts: act(xs W1[e] + b1[e]) W2[e] + b2[e], act = gelu (tanh) | relu."""

    @staticmethod
    def forward(
        ctx: Any,
        x: Tensor,
        routing_weights: Tensor,
        plan: _Plan,
        activation: str,
        w1: Tensor,
        b1: Tensor,
        w2: Tensor,
        b2: Tensor,
    ) -> Tensor:
        xs = x.index_select(0, plan.token_of_row)  # [R, d]
        pre = plan.mm(xs, w1, bias=b1)  # [R, h]
        act = F.gelu(pre, approximate="tanh") if activation == "gelu" else F.relu(pre)  # [R, h]
        ys = plan.mm(act, w2, bias=b2)  # [R, d], unweighted expert outputs
        y = plan.combine(ys)  # [N, d]
        ctx.save_for_backward(xs, pre, act, ys, w1, w2)
        ctx.plan, ctx.activation, ctx.rw_dtype = plan, activation, routing_weights.dtype
        return y

    @staticmethod
    def backward(ctx: Any, grad_y: Tensor) -> tuple[Tensor | None, ...]:
        xs, pre, act, ys, w1, w2 = ctx.saved_tensors
        plan: _Plan = ctx.plan
        g, grad_rw = plan.uncombine(grad_y, ys, ctx.needs_input_grad[1], ctx.rw_dtype)  # [R, d]
        grad_w2, grad_b2 = plan.wgrad(act, g), plan.bias_grad(g)
        grad_act = plan.mm(g, w2, transpose=True)  # [R, h]
        # in place over grad_act (elementwise, output = first input): no new [R, h] buffer
        if ctx.activation == "gelu":
            grad_pre = torch.ops.aten.gelu_backward.grad_input(
                grad_act, pre, approximate="tanh", grad_input=grad_act
            )  # [R, h]
        else:
            grad_pre = torch.ops.aten.threshold_backward.grad_input(grad_act, pre, 0, grad_input=grad_act)
        grad_w1, grad_b1 = plan.wgrad(xs, grad_pre), plan.bias_grad(grad_pre)
        grad_x = plan.scatter_rows(plan.mm(grad_pre, w1, transpose=True))  # [N, d]
        return grad_x, grad_rw, None, None, grad_w1, grad_b1, grad_w2, grad_b2


class _SortedSwiGLU(torch.autograd.Function):
    """Steps 1-3 for Mixtral's experts: (silu(xs Wg[e]) * (xs Wu[e])) Wd[e]; gate/up fused or split."""

    @staticmethod
    def forward(
        ctx: Any,
        x: Tensor,
        routing_weights: Tensor,
        plan: _Plan,
        fused: bool,
        w_a: Tensor,
        w_b: Tensor | None,
        w_down: Tensor,
    ) -> Tensor:
        """fused: w_a = w_gate_up [E, 2h, d], w_b None; split: w_a = w_gate, w_b = w_up [E, d, h]."""
        xs = x.index_select(0, plan.token_of_row)  # [R, d]
        if fused:
            gate_up, act, ys = _fused_swiglu_forward(plan, xs, w_a, w_down)
            ctx.gate_up = (
                gate_up  # per-expert [n_e, 2h] blocks (a list: not a tensor save_for_backward takes)
            )
            gate = up = None
        else:
            assert w_b is not None
            gate, up = plan.mm(xs, w_a), plan.mm(xs, w_b)  # [R, h] each
            act = F.silu(gate).mul_(up)  # [R, h], one allocation
            ys = plan.mm(act, w_down)  # [R, d]
        y = plan.combine(ys)  # [N, d]
        ctx.save_for_backward(xs, gate, up, act, ys, w_a, w_b, w_down)
        ctx.plan, ctx.fused, ctx.rw_dtype = plan, fused, routing_weights.dtype
        return y

    @staticmethod
    def backward(ctx: Any, grad_y: Tensor) -> tuple[Tensor | None, ...]:
        xs, gate, up, act, ys, w_a, w_b, w_down = ctx.saved_tensors
        plan: _Plan = ctx.plan
        g, grad_rw = plan.uncombine(grad_y, ys, ctx.needs_input_grad[1], ctx.rw_dtype)  # [R, d]
        grad_wb = None
        if ctx.fused:
            grad_xs, grad_wa, grad_wd = _fused_swiglu_backward(plan, g, xs, ctx.gate_up, act, w_a, w_down)
        else:
            grad_wd = plan.wgrad(act, g)  # [E, h, d]
            grad_act = plan.mm(g, w_down, transpose=True)  # [R, h]
            grad_up = grad_act * F.silu(gate)  # [R, h]
            grad_gate = torch.ops.aten.silu_backward(grad_act.mul_(up), gate)  # [R, h]
            grad_wa, grad_wb = plan.wgrad(xs, grad_gate), plan.wgrad(xs, grad_up)
            grad_xs = plan.mm_acc(plan.mm(grad_gate, w_a, transpose=True), grad_up, w_b, transpose=True)
        grad_x = plan.scatter_rows(grad_xs)  # [N, d]
        return grad_x, grad_rw, None, None, grad_wa, grad_wb, grad_wd


def _fused_swiglu_forward(
    plan: _Plan, xs: Tensor, w_gu: Tensor, w_down: Tensor
) -> tuple[list[Tensor], Tensor, Tensor]:
    """Expert by expert: gate_up = xs W_gu[e].T [n, 2h], act = silu(gate) * up [n, h], ys = act W_down[e].

    One expert's rows at a time, each op right after the one that wrote its input (a [n_e, 2h] block of a
    few MB to tens of MB, still in cache), instead of each op over all R rows (hundreds of MB at k >= 4,
    read back from memory). Returns (gate_up: one [n_e, 2h] tensor per expert, act [R, h], ys [R, d]).
    """
    R, h2 = xs.shape[0], w_gu.shape[1]
    h = h2 // 2
    act, ys = xs.new_empty(R, h), xs.new_empty(R, w_down.shape[2])
    gate_up: list[Tensor] = []
    for e, (lo, hi) in enumerate(plan.blocks()):
        # a tensor of its own per expert, as HF's eager loop has: writing into row blocks of one fresh
        # [R, 2h] buffer measured ~4% slower in these GEMMs (docs/benchmarks.md, the MoE layer's dispatch)
        gu = torch.mm(xs[lo:hi], w_gu[e].T)  # [n, 2h]
        gate_up.append(gu)
        if hi == lo:
            continue
        a = torch.ops.aten.silu.out(gu[:, :h], out=act[lo:hi]).mul_(gu[:, h:])  # [n, h]
        torch.mm(a, w_down[e], out=ys[lo:hi])  # [n, d]
    return gate_up, act, ys


def _fused_swiglu_backward(
    plan: _Plan, g: Tensor, xs: Tensor, gate_up: list[Tensor], act: Tensor, w_gu: Tensor, w_down: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """The chain rule of `_fused_swiglu_forward`, expert by expert, with one [n_max, h] and one [n_max, 2h]
    scratch block reused by every expert (no [R, h] / [R, 2h] gradient buffers).

    g [R, d]: dL/d ys (weighted, pads 0). Returns (dL/d xs [R, d], dL/d W_gu [E, 2h, d], dL/d W_down [E, h, d]).
    """
    blocks = plan.blocks()
    h = act.shape[1]
    n_max = max((hi - lo for lo, hi in blocks), default=0)
    grad_act_buf, grad_gu_buf = g.new_empty(n_max, h), g.new_empty(n_max, 2 * h)
    grad_xs = g.new_empty(g.shape[0], xs.shape[1])  # [R, d]
    grad_wgu, grad_wd = w_gu.new_zeros(w_gu.shape), w_down.new_zeros(w_down.shape)
    for e, (lo, hi) in enumerate(blocks):
        if hi == lo:
            grad_xs[lo:hi].zero_()
            continue
        n, g_e, gate_e, up_e = hi - lo, g[lo:hi], gate_up[e][:, :h], gate_up[e][:, h:]
        torch.mm(act[lo:hi].T, g_e, out=grad_wd[e])  # [h, d]
        grad_act = torch.mm(g_e, w_down[e].T, out=grad_act_buf[:n])  # [n, h]
        grad_gu = grad_gu_buf[:n]  # [n, 2h]: dL/d gate | dL/d up
        torch.ops.aten.silu.out(gate_e, out=grad_gu[:, h:]).mul_(grad_act)  # dL/d up = silu(gate) * grad_act
        grad_act.mul_(up_e)  # dL/d silu(gate)
        torch.ops.aten.silu_backward.grad_input(grad_act, gate_e, grad_input=grad_gu[:, :h])  # dL/d gate
        torch.mm(grad_gu.T, xs[lo:hi], out=grad_wgu[e])  # [2h, d]
        torch.mm(grad_gu, w_gu[e], out=grad_xs[lo:hi])  # [n, d]
    return grad_xs, grad_wgu, grad_wd


def sorted_moe(
    x: Tensor,
    experts: Experts,
    selected_experts: Tensor,
    routing_weights: Tensor,
    *,
    padded: bool = True,
    fold: bool = True,
    pad_max_waste: float = math.inf,
) -> Tensor:
    """Listing 1's function with each expert run once on the rows routed to it.

    x [N, d]; selected_experts [N, k] long; routing_weights [N, k]. Returns y [N, d]. `padded`: one bmm per
    projection over expert-padded rows (when the pads add at most `pad_max_waste` of the N*k rows), else one
    GEMM per expert slice; `fold`: the routing weights folded
    into one sparse combine (see the module docstring). The gate/up layout is the experts' own.
    """
    padded = padded and x.shape[0] > 0  # the pads point at token 0
    plan = _Plan(selected_experts, routing_weights, experts.num_experts, x.dtype, padded, fold, pad_max_waste)
    # Mixed precision (bf16 activations, fp32 master weights): cast the weights, as autocast would for
    # a matmul; the cast's backward returns their gradients in the parameters' dtype.
    if experts.activation == "swiglu":
        if experts.fused_gate_up:
            w_a, w_b, w_d = experts.w_gate_up.to(x.dtype), None, experts.w_down.to(x.dtype)
        else:
            w_a, w_b, w_d = (p.to(x.dtype) for p in (experts.w_gate, experts.w_up, experts.w_down))
        out = _SortedSwiGLU.apply(x, routing_weights, plan, experts.fused_gate_up, w_a, w_b, w_d)
    else:
        params = [p.to(x.dtype) for p in (experts.w1, experts.b1, experts.w2, experts.b2)]
        out = _SortedMLP.apply(x, routing_weights, plan, experts.activation, *params)
    assert isinstance(out, Tensor)
    return out
