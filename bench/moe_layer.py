"""Forward+backward time of SparseMoE against its anchors, measured side by side in one run.

    .venv/bin/python bench/moe_layer.py                 # E=8, d=512, h=1024, 8192 tokens, k = 1 2 4 8
    .venv/bin/python bench/moe_layer.py --quick         # small smoke run (seconds)

Rows per k (all forward + backward to the input and every parameter, best of --repeats after a warm-up, variants interleaved):
  ours gelu        SparseMoE, dispatch="sorted" with every lever on (the defaults), the paper's 2-matrix GELU expert
  ours swiglu      the same with Mixtral's 3-matrix expert
  ours grouped     SparseMoE gelu, dispatch="grouped_mm" (torch grouped GEMM), where it runs
  (a) dense        SparseMoE gelu, dispatch="dense": Listing 1, every expert on every routed row, masked
  (b) hf eager     transformers' MixtralSparseMoeBlock, experts_implementation="eager", weights of ours swiglu
  (b) hf grouped   the same block with experts_implementation="grouped_mm", where it runs
  (c) gemm bound   one gelu expert MLP run densely on N*k rows, no routing: the matmul work ours cannot avoid
Ablations (second table; --no-ablations skips them): the same layer with one lever of the sorted dispatch
off (MoEConfig), or all three off (the dispatch before the sorted one):
  -padded          padded_bmm=False: one GEMM per expert slice, never the padded bmm
  +pad             pad_max_waste=inf: always the padded bmm, however many pad rows the routing needs (ours pads only
                   when the pads add <= 1% of the N*k rows; the pad share of each k is printed)
  -fold            fold_routing_weight=False: weighted copy of the rows then index_add_, instead of one
                   sparse combine with the routing weights folded in
  -fused           (swiglu) fused_gate_up=False: two [d, h] weights (x @ W) instead of HF's [2h, d] (x @ W.T)
  none             all three off
Goals at every k: ours swiglu/(b eager) <= 1.0, ours gelu/(c) <= 1.10 (and (a)/ours >= 6 at k=2).
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from _device import synced
from torch import Tensor

from worker.core.moe import MoEConfig, SparseMoE
from worker.core.moe.experts import grouped_mm_unavailable_reason


def time_interleaved(
    steps: dict[str, Callable[[], None]], repeats: int, clock: Callable[[], float]
) -> dict[str, float]:
    """Best-of-`repeats` milliseconds of each step (one forward + backward), after one warm-up call each.

    The steps run round-robin, so load from other processes on a shared machine hits every variant alike,
    and the minimum (not the median) is kept: contention only ever adds time. Each round runs the steps in
    a new order (seeded shuffle): what a step leaves behind (the allocator's free lists, pages handed back
    to the kernel, the cache) then falls on a different neighbour each round instead of always on the same
    one (seen: two variants of identical configuration 11% apart when one always ran first).
    """
    times: dict[str, list[float]] = {name: [] for name in steps}
    for step in steps.values():
        step()
    clock()  # a synced clock (bench/_device.py): waits for the warm-ups' queued GPU work
    order = list(steps)
    shuffle = random.Random(0).shuffle
    for _ in range(repeats):
        shuffle(order)
        for name in order:
            step = steps[name]
            t0 = clock()
            step()
            times[name].append((clock() - t0) * 1e3)
    return {name: min(ts) for name, ts in times.items()}


def moe_step(module: torch.nn.Module, x: Tensor, grad_out: Tensor, returns_aux: bool) -> Callable[[], None]:
    def step() -> None:
        for p in module.parameters():
            p.grad = None
        x.grad = None
        out = module(x)
        y = out[0] if returns_aux else out
        y.backward(grad_out)

    return step


def gemm_bound_step(moe: SparseMoE, rows: Tensor, grad_rows: Tensor) -> Callable[[], None]:
    """Expert 0's MLP (same function as ours gelu) on all N*k rows at once: no router, sort or combine."""
    ex = moe.experts
    w1, b1, w2, b2 = (p[0].detach().clone().requires_grad_(True) for p in (ex.w1, ex.b1, ex.w2, ex.b2))

    def step() -> None:
        for t in (w1, b1, w2, b2, rows):
            t.grad = None
        y = torch.addmm(b2, F.gelu(torch.addmm(b1, rows, w1), approximate="tanh"), w2)  # [N*k, d]
        y.backward(grad_rows)

    return step


def mixtral_block(ours_swiglu: SparseMoE, k: int, implementation: str) -> torch.nn.Module:
    """transformers' MixtralSparseMoeBlock holding exactly the weights of our swiglu layer."""
    from transformers import MixtralConfig
    from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock

    cfg = ours_swiglu.cfg
    config = MixtralConfig(
        hidden_size=cfg.d_model,
        intermediate_size=cfg.expert_hidden,
        num_local_experts=cfg.num_experts,
        num_experts_per_tok=k,
    )
    config._experts_implementation = implementation
    ex = ours_swiglu.experts
    p = next(ours_swiglu.parameters())
    block = MixtralSparseMoeBlock(config).to(device=p.device, dtype=p.dtype)
    with torch.no_grad():
        block.gate.weight.copy_(ours_swiglu.router.weight)
        # Mixtral stores gate_up_proj [E, 2h, d] (gate rows first) and down_proj [E, d, h], applied as x @ W.T
        w_gate, w_up, _ = ex.swiglu_weights()
        block.experts.gate_up_proj.copy_(torch.cat([w_gate, w_up], dim=2).transpose(1, 2))
        block.experts.down_proj.copy_(ex.w_down.transpose(1, 2))
    return block


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def fmt(v: float | None, ratio: bool = False) -> str:
    if v is None:
        return "-"
    return f"{v:.2f}x" if ratio else f"{v:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ks", default="1,2,4,8", help="comma-separated experts per token")
    ap.add_argument("--experts", type=int, default=8)
    ap.add_argument("--d-model", type=int, default=512)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument(
        "--dense-max-k", type=int, default=8, help="skip (a) above this k (it costs E times more)"
    )
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    ap.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall: perf_counter; cpu: this process's CPU time (sums threads; steadier on a loaded CPU machine)",
    )
    ap.add_argument("--quick", action="store_true", help="smoke run: 512 tokens, d=64, h=128, 1 repeat")
    ap.add_argument("--no-ablations", action="store_true", help="skip the lever ablation rows")
    ap.add_argument("--no-hf-grouped", action="store_true", help="skip (b) hf grouped")
    ap.add_argument(
        "--thp",
        action="store_true",
        help="re-run this process with THP_MEM_ALLOC_ENABLE=1 (torch's CPU allocator asks for transparent huge "
        "pages: far fewer page faults on the large fresh buffers every variant allocates each step)",
    )
    args = ap.parse_args()
    if args.thp and os.environ.get("THP_MEM_ALLOC_ENABLE") != "1":
        # torch reads the variable once, at its first allocation: set it for a fresh interpreter
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "THP_MEM_ALLOC_ENABLE": "1"})
    if args.quick:
        args.tokens, args.d_model, args.hidden, args.repeats = 512, 64, 128, 1

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    if args.clock == "cpu" and device.type == "cuda":
        ap.error("--clock cpu measures CPU work only; use wall time on CUDA")
    clock = synced(device, clock)  # on CUDA: read once the GPU's queued work is done
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    ks = [int(k) for k in args.ks.split(",")]
    E, d, h, N = args.experts, args.d_model, args.hidden, args.tokens
    hw = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_name()
    thp = os.environ.get("THP_MEM_ALLOC_ENABLE") == "1"
    print(
        f"device {device} ({hw}), {torch.get_num_threads()} threads, dtype {dtype}, torch {torch.__version__}, "
        f"THP_MEM_ALLOC_ENABLE={'1' if thp else 'unset'}"
    )
    print(
        f"E={E} d={d} h={h} tokens={N} repeats={args.repeats} (best-of-repeats {args.clock}-clock ms of forward+backward, variants interleaved)\n"
    )

    torch.manual_seed(0)
    base = MoEConfig(d_model=d, num_experts=E, top_k=1, expert_hidden=h)
    ours_gelu = SparseMoE(base).to(device, dtype)
    ours_swiglu = SparseMoE(
        MoEConfig(d_model=d, num_experts=E, top_k=1, expert_hidden=h, activation="swiglu")
    )
    ours_swiglu = ours_swiglu.to(device, dtype)
    ours_grouped = copy.deepcopy(ours_gelu)
    ours_grouped.cfg = MoEConfig(d_model=d, num_experts=E, top_k=1, expert_hidden=h, dispatch="grouped_mm")
    dense = copy.deepcopy(ours_gelu)
    dense.cfg = MoEConfig(d_model=d, num_experts=E, top_k=1, expert_hidden=h, dispatch="dense")

    ablations: dict[str, SparseMoE] = {}
    if not args.no_ablations:
        off: dict[str, dict[str, object]] = {
            "-padded": {"padded_bmm": False},
            "+pad": {"pad_max_waste": float("inf")},
            "-fold": {"fold_routing_weight": False},
        }
        none = {"padded_bmm": False, "fold_routing_weight": False}
        for act, src in (("gelu", ours_gelu), ("swiglu", ours_swiglu)):
            variants = dict(off, none=none)
            if act == "swiglu":
                variants = dict(
                    off, **{"-fused": {"fused_gate_up": False}}, none=dict(none, fused_gate_up=False)
                )
            for name, flags in variants.items():
                cfg = MoEConfig(d_model=d, num_experts=E, top_k=1, expert_hidden=h, activation=act)
                for key, value in flags.items():
                    setattr(cfg, key, value)
                m = SparseMoE(cfg).to(device, dtype)
                m.load_state_dict(src.state_dict())  # same weights (the split layout converts on load)
                ablations[f"{act} {name}"] = m

    x = torch.randn(1, N, d, device=device, dtype=dtype, requires_grad=True)
    grad_out = torch.randn(1, N, d, device=device, dtype=dtype)
    grouped_reason = grouped_mm_unavailable_reason(x.view(N, d), ours_gelu.experts)
    if grouped_reason is None:
        try:  # a kernel refusing these shapes at run time drops the row instead of ending the bench
            with torch.no_grad():
                err = (ours_grouped(x)[0] - ours_gelu(x)[0]).abs().max().item()
            print(f"ours grouped: max |grouped - ours gelu| = {err:.2e} (k=1)")
        except (RuntimeError, NotImplementedError) as exc:
            grouped_reason = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    if grouped_reason:
        print(f"ours grouped: not run ({grouped_reason})")

    cols = ["k", "ours gelu", "ours swiglu", "ours grouped", "(a) dense", "(b) hf eager", "(b) hf grouped"]
    cols += ["(c) gemm", "(a)/ours", "swiglu/(b eager)", "ours/(c)"]
    rows: list[list[str]] = []
    abl_cols = ["k", *ablations]
    abl_rows: list[list[str]] = []
    goal_lines: list[str] = []
    for k in ks:
        for m in (ours_gelu, ours_swiglu, ours_grouped, dense, *ablations.values()):
            m.top_k = k
        with torch.no_grad():
            counts = ours_gelu(x)[1].tokens_per_expert
        pads = E * int(counts.max()) / (N * k) - 1
        print(
            f"k={k}: pad rows {pads:.1%} of N*k (ours {'pads' if pads <= ours_gelu.cfg.pad_max_waste else 'slices'})",
            flush=True,
        )
        steps = {
            "ours": moe_step(ours_gelu, x, grad_out, True),
            "swiglu": moe_step(ours_swiglu, x, grad_out, True),
        }
        if grouped_reason is None:
            steps["grouped"] = moe_step(ours_grouped, x, grad_out, True)
        if k <= args.dense_max_k:
            steps["dense"] = moe_step(dense, x, grad_out, True)
        for name, m in ablations.items():
            steps[name] = moe_step(m, x, grad_out, True)
        for impl in ("eager",) if args.no_hf_grouped else ("eager", "grouped_mm"):
            block = mixtral_block(ours_swiglu, k, impl)
            try:
                with torch.no_grad():
                    err = (block(x) - ours_swiglu(x)[0]).abs().max().item()
            except (RuntimeError, NotImplementedError) as exc:
                print(f"(b) hf {impl} at k={k}: not run ({type(exc).__name__}: {str(exc).splitlines()[0]})")
                continue
            if k == ks[0]:
                print(f"(b) hf {impl}: max |hf - ours swiglu| = {err:.2e}")
            steps[impl] = moe_step(block, x, grad_out, False)
        rows_x = torch.randn(N * k, d, device=device, dtype=dtype, requires_grad=True)
        steps["gemm"] = gemm_bound_step(ours_gelu, rows_x, torch.randn_like(rows_x))
        t: dict[str, float | None] = dict(time_interleaved(steps, args.repeats, clock))
        del steps, rows_x
        ours = t["ours"]
        assert ours is not None and t["swiglu"] is not None and t["gemm"] is not None
        dense_t, eager_t = t.get("dense"), t.get("eager")
        rows.append(
            [
                str(k),
                fmt(ours),
                fmt(t["swiglu"]),
                fmt(t.get("grouped")),
                fmt(t.get("dense")),
                fmt(t.get("eager")),
                fmt(t.get("grouped_mm")),
                fmt(t["gemm"]),
                fmt(dense_t / ours if dense_t else None, ratio=True),
                fmt(t["swiglu"] / eager_t if eager_t else None, ratio=True),
                fmt(ours / t["gemm"], ratio=True),
            ]
        )
        print(" | ".join(rows[-1]), flush=True)
        if ablations:
            abl: list[str] = [str(k)]
            for name in ablations:
                t_a, t_ref = t[name], t["swiglu" if name.startswith("swiglu") else "ours"]
                assert t_a is not None and t_ref is not None
                abl.append(f"{t_a:.1f} ({t_a / t_ref:.2f}x)")
            abl_rows.append(abl)
        r_hf = t["swiglu"] / eager_t if eager_t else None
        r_c = ours / t["gemm"]
        goal_lines.append(
            f"k={k}: ours swiglu/(b eager) = {fmt(r_hf, ratio=True)} "
            f"({'met' if r_hf is not None and r_hf <= 1.0 else 'MISSED'}, goal <= 1.00x); "
            f"ours gelu/(c) = {r_c:.2f}x ({'met' if r_c <= 1.10 else 'MISSED'}, goal <= 1.10x)"
        )

    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    print()
    print("| " + " | ".join(c.ljust(w) for c, w in zip(cols, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(v.rjust(w) for v, w in zip(r, widths)) + " |")
    if abl_rows:
        print(
            "\nAblations: ms of forward+backward with one lever off (ratio to the all-levers row of the same expert)\n"
        )
        widths = [max(len(c), *(len(r[i]) for r in abl_rows)) for i, c in enumerate(abl_cols)]
        print("| " + " | ".join(c.ljust(w) for c, w in zip(abl_cols, widths)) + " |")
        print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        for r in abl_rows:
            print("| " + " | ".join(v.rjust(w) for v, w in zip(r, widths)) + " |")
    print("\nGoals:")
    for line in goal_lines:
        print("  " + line)


if __name__ == "__main__":
    main()
