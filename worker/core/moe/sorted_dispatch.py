"""The "sorted" dispatch: Listing 1's function with each expert run once on the rows routed to it.

y[n] = sum_j routing_weights[n, j] * expert_{selected_experts[n, j]}(x[n])
(SMoE paper 004, appendix A.2.1, Listing 1 lines 33-53), computed as:

1. order the N*k (token, slot) pairs by expert, gather their rows: xs [S = N*k, d], expert e's rows contiguous;
2. per expert, one GEMM pair on its slice, written into preallocated [S, h] / [S, d] buffers, with the
   activation applied once over all S rows;
3. scale each row by its routing weight and index_add it back to its token.

Forward and backward are written by hand (a torch.autograd.Function) because the autograd version of the
same loop spends ~15% of its time on copies the hand-written one avoids: concatenating the per-expert
outputs, the backward of `split` (another concatenation), and stacking the per-expert weight gradients.
Here every per-expert result is written in place (`out=`) into one buffer. The gradients are the plain
chain rule of steps 1-3; the tests compare them with autograd through `dense_masked_moe` for every k.
"""

from __future__ import annotations

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
        order: Tensor,
        counts: list[int],
        activation: str,
        w1: Tensor,
        b1: Tensor,
        w2: Tensor,
        b2: Tensor,
    ) -> Tensor:
        N, d = x.shape
        k = routing_weights.shape[1]
        S, h = order.shape[0], w1.shape[2]
        token = order // k  # [S], the token of each sorted row
        w_sorted = routing_weights.reshape(-1).index_select(0, order).to(x.dtype)  # [S]
        xs = x.index_select(0, token)  # [S, d]
        bounds = _bounds(counts)
        pre = x.new_empty(S, h)  # [S, h], pre-activation
        for e, (lo, hi) in enumerate(bounds):
            torch.addmm(b1[e], xs[lo:hi], w1[e], out=pre[lo:hi])
        act = F.gelu(pre, approximate="tanh") if activation == "gelu" else F.relu(pre)  # [S, h]
        ys = x.new_empty(S, d)  # [S, d], unweighted expert outputs
        for e, (lo, hi) in enumerate(bounds):
            torch.addmm(b2[e], act[lo:hi], w2[e], out=ys[lo:hi])
        y = x.new_zeros(N, d).index_add_(0, token, ys * w_sorted[:, None])  # [N, d]
        ctx.save_for_backward(xs, pre, act, ys, w_sorted, token, order, w1, w2)
        ctx.counts, ctx.activation, ctx.k, ctx.rw_dtype = counts, activation, k, routing_weights.dtype
        return y

    @staticmethod
    def backward(ctx: Any, grad_y: Tensor) -> tuple[Tensor | None, ...]:
        xs, pre, act, ys, w_sorted, token, order, w1, w2 = ctx.saved_tensors
        N, k = grad_y.shape[0], ctx.k
        bounds = _bounds(ctx.counts)
        g = grad_y.contiguous().index_select(0, token)  # [S, d], dL/d(weighted row)
        grad_rw = None
        if ctx.needs_input_grad[1]:
            grad_w_sorted = (g * ys).sum(dim=1)  # [S], dL/dw = <g, unweighted row>
            grad_rw = grad_w_sorted.new_empty(N * k).index_copy_(0, order, grad_w_sorted).view(N, k)
            grad_rw = grad_rw.to(ctx.rw_dtype)
        g.mul_(w_sorted[:, None])  # [S, d], now dL/d(unweighted row)
        grad_w1, grad_b1 = torch.empty_like(w1), w1.new_empty(w1.shape[0], w1.shape[2])
        grad_w2, grad_b2 = torch.empty_like(w2), w2.new_empty(w2.shape[0], w2.shape[2])
        grad_act = torch.empty_like(act)  # [S, h]
        for e, (lo, hi) in enumerate(bounds):
            torch.mm(act[lo:hi].T, g[lo:hi], out=grad_w2[e])
            torch.sum(g[lo:hi], dim=0, out=grad_b2[e])
            torch.mm(g[lo:hi], w2[e].T, out=grad_act[lo:hi])
        if ctx.activation == "gelu":
            grad_pre = torch.ops.aten.gelu_backward(grad_act, pre, approximate="tanh")  # [S, h]
        else:
            grad_pre = torch.ops.aten.threshold_backward(grad_act, pre, 0)  # [S, h]
        grad_xs = torch.empty_like(xs)  # [S, d]
        for e, (lo, hi) in enumerate(bounds):
            torch.mm(xs[lo:hi].T, grad_pre[lo:hi], out=grad_w1[e])
            torch.sum(grad_pre[lo:hi], dim=0, out=grad_b1[e])
            torch.mm(grad_pre[lo:hi], w1[e].T, out=grad_xs[lo:hi])
        grad_x = grad_xs.new_zeros(N, xs.shape[1]).index_add_(0, token, grad_xs)  # [N, d]
        return grad_x, grad_rw, None, None, None, grad_w1, grad_b1, grad_w2, grad_b2


class _SortedSwiGLU(torch.autograd.Function):
    """Steps 1-3 for Mixtral's experts: (silu(xs Wg[e]) * (xs Wu[e])) Wd[e]."""

    @staticmethod
    def forward(
        ctx: Any,
        x: Tensor,
        routing_weights: Tensor,
        order: Tensor,
        counts: list[int],
        w_gate: Tensor,
        w_up: Tensor,
        w_down: Tensor,
    ) -> Tensor:
        N, d = x.shape
        k = routing_weights.shape[1]
        S, h = order.shape[0], w_gate.shape[2]
        token = order // k  # [S]
        w_sorted = routing_weights.reshape(-1).index_select(0, order).to(x.dtype)  # [S]
        xs = x.index_select(0, token)  # [S, d]
        bounds = _bounds(counts)
        gate, up = x.new_empty(S, h), x.new_empty(S, h)  # [S, h] each
        for e, (lo, hi) in enumerate(bounds):
            torch.mm(xs[lo:hi], w_gate[e], out=gate[lo:hi])
            torch.mm(xs[lo:hi], w_up[e], out=up[lo:hi])
        act = F.silu(gate) * up  # [S, h]
        ys = x.new_empty(S, d)  # [S, d]
        for e, (lo, hi) in enumerate(bounds):
            torch.mm(act[lo:hi], w_down[e], out=ys[lo:hi])
        y = x.new_zeros(N, d).index_add_(0, token, ys * w_sorted[:, None])  # [N, d]
        ctx.save_for_backward(xs, gate, up, act, ys, w_sorted, token, order, w_gate, w_up, w_down)
        ctx.counts, ctx.k, ctx.rw_dtype = counts, k, routing_weights.dtype
        return y

    @staticmethod
    def backward(ctx: Any, grad_y: Tensor) -> tuple[Tensor | None, ...]:
        xs, gate, up, act, ys, w_sorted, token, order, w_gate, w_up, w_down = ctx.saved_tensors
        N, k = grad_y.shape[0], ctx.k
        bounds = _bounds(ctx.counts)
        g = grad_y.contiguous().index_select(0, token)  # [S, d]
        grad_rw = None
        if ctx.needs_input_grad[1]:
            grad_w_sorted = (g * ys).sum(dim=1)  # [S]
            grad_rw = grad_w_sorted.new_empty(N * k).index_copy_(0, order, grad_w_sorted).view(N, k)
            grad_rw = grad_rw.to(ctx.rw_dtype)
        g.mul_(w_sorted[:, None])
        grad_wg, grad_wu, grad_wd = torch.empty_like(w_gate), torch.empty_like(w_up), torch.empty_like(w_down)
        grad_act = torch.empty_like(act)  # [S, h]
        for e, (lo, hi) in enumerate(bounds):
            torch.mm(act[lo:hi].T, g[lo:hi], out=grad_wd[e])
            torch.mm(g[lo:hi], w_down[e].T, out=grad_act[lo:hi])
        grad_up = grad_act * F.silu(gate)  # [S, h]
        grad_gate = torch.ops.aten.silu_backward(grad_act * up, gate)  # [S, h]
        grad_xs = torch.empty_like(xs)  # [S, d]
        for e, (lo, hi) in enumerate(bounds):
            torch.mm(xs[lo:hi].T, grad_gate[lo:hi], out=grad_wg[e])
            torch.mm(xs[lo:hi].T, grad_up[lo:hi], out=grad_wu[e])
            torch.mm(grad_gate[lo:hi], w_gate[e].T, out=grad_xs[lo:hi])
            grad_xs[lo:hi].addmm_(grad_up[lo:hi], w_up[e].T)
        grad_x = grad_xs.new_zeros(N, xs.shape[1]).index_add_(0, token, grad_xs)  # [N, d]
        return grad_x, grad_rw, None, None, grad_wg, grad_wu, grad_wd


def sorted_moe(x: Tensor, experts: Experts, selected_experts: Tensor, routing_weights: Tensor) -> Tensor:
    """Listing 1's function with each expert run once on its contiguous slice of the routed rows.

    x [N, d]; selected_experts [N, k] long; routing_weights [N, k]. Returns y [N, d].
    """
    order, counts = sort_by_expert(selected_experts, experts.num_experts)
    count_list = counts.tolist()
    # Mixed precision (bf16 activations, fp32 master weights): cast the weights, as autocast would for
    # a matmul; the cast's backward returns their gradients in the parameters' dtype.
    params = [p.to(x.dtype) for p in experts.parameters()]
    if experts.activation == "swiglu":
        out = _SortedSwiGLU.apply(x, routing_weights, order, count_list, *params)
    else:
        out = _SortedMLP.apply(x, routing_weights, order, count_list, experts.activation, *params)
    assert isinstance(out, Tensor)
    return out
