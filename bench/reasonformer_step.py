"""ReasonFormer training-step costs, measured side by side in one run (docs/benchmarks.md, "ReasonFormer").

    .venv/bin/python bench/reasonformer_step.py                 # d=256, 6 skills, depth 3, batch 32 x 64 tokens
    .venv/bin/python bench/reasonformer_step.py --quick         # small smoke run (seconds)
    python bench/reasonformer_step.py --device cuda --dtype bfloat16   # on a GPU (default device: cuda if seen)

Part A, reasoning-module time (forward + backward of eq. 2 at every step, routing fixed):
  sparse top-2    each module runs only on the instances that chose it (dispatch.sparse_dispatch)
  full            every module on every instance with its softmax weight (top_k = n)
  masked top-2    every module on every instance, weights zero outside the top-2 (dispatch.masked_dispatch)
  Ratios: sparse/full (goal <= 0.45, ideal k/n = 1/3) and sparse/masked.
  Also the whole cascade (router, modules, stop gates) forward + backward, sparse vs full.
Part B, pre-training step (forward, backward, AdamW) of ReasonFormer shared top-2 against a plain T5 whose
  parameter count is closest to ReasonFormer's activated count (Table 1's "Activated Parameters"):
  examples per second and the ratio.
Variants are interleaved round-robin, best of --repeats after a warm-up each (contention only adds time).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from _device import DTYPES, add_device_args, describe, synced
from torch import Tensor
from transformers import T5ForConditionalGeneration

from worker.core.reasonformer.blocks import T5Context
from worker.core.reasonformer.config import ReasoningConfig, t5_preset
from worker.core.reasonformer.dispatch import masked_dispatch, sparse_dispatch
from worker.core.reasonformer.model import ReasonFormerForConditionalGeneration
from worker.core.reasonformer.params import parameter_counts
from worker.core.reasonformer.routing import dense_weights, skill_probs, top_k_routing

SKILLS = ("logic", "qa", "ner", "nli", "fact", "general")


@dataclass(frozen=True)
class Sizes:
    d_model: int
    d_ff: int
    heads: int
    batch: int
    seq: int
    target: int
    representation: int
    module_layers: int


FULL = Sizes(d_model=256, d_ff=1024, heads=4, batch=32, seq=64, target=16, representation=2, module_layers=3)
QUICK = Sizes(d_model=64, d_ff=128, heads=4, batch=8, seq=16, target=4, representation=2, module_layers=1)


def interleaved(
    steps: dict[str, Callable[[], None]], repeats: int, clock: Callable[[], float]
) -> dict[str, float]:
    """Best-of-``repeats`` milliseconds per step, variants round-robin after one warm-up each."""
    times: dict[str, list[float]] = {name: [] for name in steps}
    for step in steps.values():
        step()
    for _ in range(repeats):
        for name, step in steps.items():
            t0 = clock()
            step()
            times[name].append((clock() - t0) * 1e3)
    return {name: min(ts) for name, ts in times.items()}


def t5_config(s: Sizes, num_layers: int, vocab: int = 512) -> object:
    return t5_preset(
        "t5-tiny", d_model=s.d_model, d_kv=s.d_model // s.heads, d_ff=s.d_ff, num_heads=s.heads,
        num_layers=num_layers, num_decoder_layers=2, vocab_size=vocab, relative_attention_num_buckets=32,
        relative_attention_max_distance=128,
    )  # fmt: skip


def reasonformer(
    s: Sizes, top_k: int | None, dispatch: str, device: torch.device, dtype: torch.dtype
) -> ReasonFormerForConditionalGeneration:
    rc = ReasoningConfig(skills=SKILLS, variant="shared", depth=3, representation_layers=s.representation,
                         module_layers=s.module_layers, top_k=top_k, adapter_bottleneck=64, router_hidden=64,
                         dispatch=dispatch)  # type: ignore[arg-type]  # fmt: skip
    torch.manual_seed(0)
    t5 = T5ForConditionalGeneration(t5_config(s, s.representation + s.module_layers))  # type: ignore[arg-type]
    return ReasonFormerForConditionalGeneration.from_t5(t5, rc).to(device, dtype).train()


def part_a(
    s: Sizes, repeats: int, clock: Callable[[], float], device: torch.device, dtype: torch.dtype
) -> dict[str, float]:
    model = reasonformer(s, 2, "sparse", device, dtype)
    reasoner = model.encoder.reasoner
    modules = list(reasoner.skill_modules)
    B, T, d, n = s.batch, s.seq, s.d_model, len(SKILLS)
    g = torch.Generator().manual_seed(1)
    h = torch.randn(B, T, d, generator=g).to(device, dtype)
    ctx = T5Context(None, model.encoder.representation.t5_position_bias(T).detach())
    logits = torch.randn(B, n, generator=g).to(device)
    probs = skill_probs(logits)
    w2, s2 = top_k_routing(probs, 2)
    wn, sn = top_k_routing(probs, n)
    dense2 = dense_weights(w2, s2, n)

    def modules_step(run: Callable[[Tensor, int], Tensor]) -> Callable[[], None]:
        def step() -> None:
            x = h.clone().requires_grad_(True)
            out = x
            for i in range(3):  # depth 3: each step's modules (with that step's adapters) on the last output
                out = run(out, i)
            out.sum().backward()
            model.zero_grad(set_to_none=True)

        return step

    steps = {
        "modules sparse top-2": modules_step(lambda x, i: sparse_dispatch(x, modules, w2, s2, ctx, i)),
        "modules full": modules_step(lambda x, i: sparse_dispatch(x, modules, wn, sn, ctx, i)),
        "modules masked top-2": modules_step(lambda x, i: masked_dispatch(x, modules, dense2, ctx, i)),
    }
    full_model = reasonformer(s, None, "sparse", device, dtype)
    mask = torch.ones(B, T, dtype=torch.bool, device=device)

    def cascade(m: ReasonFormerForConditionalGeneration) -> Callable[[], None]:
        def step() -> None:
            x = h.clone().requires_grad_(True)
            out, _ = m.encoder.reasoner(x, ctx, mask)
            out.sum().backward()
            m.zero_grad(set_to_none=True)

        return step

    steps["cascade sparse top-2"] = cascade(model)
    steps["cascade full"] = cascade(full_model)
    return interleaved(steps, repeats, clock)


def part_b(
    s: Sizes, repeats: int, clock: Callable[[], float], device: torch.device, dtype: torch.dtype
) -> tuple[dict[str, float], dict[str, int]]:
    rf = reasonformer(s, 2, "sparse", device, dtype)
    activated = parameter_counts(rf).activated
    candidates = {L: T5ForConditionalGeneration(t5_config(s, L)) for L in range(2, 25)}  # type: ignore[arg-type]
    L, t5 = min(candidates.items(), key=lambda kv: abs(parameter_counts(kv[1]).total - activated))
    del candidates
    t5.to(device, dtype).train()
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(2, 512, (s.batch, s.seq), generator=g).to(device)
    labels = torch.randint(2, 512, (s.batch, s.target), generator=g).to(device)
    skill_labels = torch.randint(0, len(SKILLS), (s.batch,), generator=g).to(device)

    def train_step(model: torch.nn.Module, **extra: Tensor) -> Callable[[], None]:
        opt = torch.optim.AdamW(model.parameters(), lr=0.0)  # lr 0: the weights stay put

        def step() -> None:
            out = model(input_ids=ids, labels=labels, **extra)
            opt.zero_grad(set_to_none=True)
            out.loss.backward()
            opt.step()

        return step

    times = interleaved(
        {
            "reasonformer shared top-2": train_step(rf, skill_labels=skill_labels),
            f"t5 ({L} encoder blocks)": train_step(t5),
        },
        repeats,
        clock,
    )
    return times, {
        "activated": activated,
        "t5": parameter_counts(t5).total,
        "total": parameter_counts(rf).total,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    add_device_args(parser, random_weights=False)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    s = QUICK if args.quick else FULL
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    device, dtype = torch.device(args.device), DTYPES[args.dtype]
    if device.type == "cuda" and args.clock == "cpu":
        parser.error("--clock cpu measures CPU work only; use wall time on CUDA")
    clock = synced(device, clock)  # on CUDA: read once the GPU's queued work is done
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {platform.processor() or platform.machine()}, "
          f"load average {os.getloadavg()[0]:.1f}, clock {args.clock}, repeats {args.repeats}")  # fmt: skip
    print(f"device {describe(device)}, dtype {args.dtype}")
    print(f"sizes: {s}, 6 skills, depth 3, adapters 64")
    a = part_a(s, args.repeats, clock, device, dtype)
    print("\nPart A: reasoning modules, forward + backward, ms (best of repeats)")
    for name, ms in a.items():
        print(f"  {name:24s} {ms:9.1f}")
    print(
        f"  sparse/full   (modules) {a['modules sparse top-2'] / a['modules full']:.3f}  goal <= 0.45, ideal 0.333"
    )
    print(f"  sparse/masked (modules) {a['modules sparse top-2'] / a['modules masked top-2']:.3f}")
    print(f"  sparse/full   (cascade) {a['cascade sparse top-2'] / a['cascade full']:.3f}")
    b, counts = part_b(s, args.repeats, clock, device, dtype)
    print("\nPart B: pre-training step (forward, backward, AdamW), ms and examples/s")
    for name, ms in b.items():
        print(f"  {name:28s} {ms:9.1f} ms  {s.batch / ms * 1e3:8.1f} ex/s")
    rf_ms, t5_ms = b["reasonformer shared top-2"], next(v for k, v in b.items() if k.startswith("t5"))
    print(
        f"  parameters: reasonformer total {counts['total']:,}, activated {counts['activated']:,}; t5 {counts['t5']:,}"
    )
    print(f"  throughput reasonformer/t5 {t5_ms / rf_ms:.3f}")
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
