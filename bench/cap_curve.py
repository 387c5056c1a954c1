"""The full-depth CAP curve (every start layer, the three protocols) against its anchor: one full forward
of the batch per layer per protocol (3 x n forwards, what a curve costs when each point re-runs the
model). Ours runs one clean forward that records the stream entering every block, then for each start
layer L only blocks L.. on the shorter word sequence, the three protocols stacked in one batch. Goal:
ours / anchor <= 0.6. ``--naive`` also times the naive CAP (a fresh clean forward per point, then the
pooled run). Prints; asserts nothing.

    .venv/bin/python bench/cap_curve.py                          # SmolLM2-135M, 30 layers, 64 items
    .venv/bin/python bench/cap_curve.py --model tiny-llama --items 16
    python bench/cap_curve.py --device cuda --dtype bfloat16 --random-weights   # GPU, no checkpoint
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable

import torch
from _device import DTYPES, add_device_args, bench_model, describe, synced

from worker.core.cap import PROTOCOLS, cap_curve, cap_curve_naive
from worker.core.cap.curve import chunks_by_default, pooled_logits
from worker.core.carma.batches import Batch, batches
from worker.core.carma.datasets import wordnet_idm
from worker.core.carma.residual import capture_inputs, last_token_logits
from worker.core.carma.tasks import encode, prompt_template, split


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--items", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--sorted", action="store_true", help="batch the items in order of token length")
    ap.add_argument("--naive", action="store_true", help="also time the naive CAP (slowest)")
    add_device_args(ap)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    clock = synced(device, time.perf_counter)

    lm = bench_model(args.model, device, DTYPES[args.dtype], args.random_weights)
    model = lm.model.eval()
    n = lm.num_layers
    items, _ = encode(wordnet_idm(("n",)), lm.tokenizer, prompt_template("idm", lm.model_type), 64)
    test = split(items, 42).test[: args.items]
    if args.sorted:
        test = sorted(test, key=lambda e: len(e.input_ids))
    data = [b.to(device) for b in batches(test, args.batch_size, int(lm.tokenizer.pad_token_id))]
    layers = list(range(n))

    @torch.no_grad()
    def anchor(data: list[Batch]) -> None:
        for batch in data:
            for _ in range(n * len(PROTOCOLS)):
                last_token_logits(model, batch.attention_mask, input_ids=batch.input_ids)

    variants: dict[str, Callable[[list[Batch]], object]] = {
        "anchor (3n forwards)": anchor,
        # the default chooses by device (chunks on a CPU, one padded batch on a GPU): both forced too
        "ours": lambda d: cap_curve(model, d, layers),
        "ours, chunked": lambda d: cap_curve(model, d, layers, chunked=True),
        "ours, unchunked": lambda d: cap_curve(model, d, layers, chunked=False),
    }
    if args.naive:
        variants["naive CAP"] = lambda d: cap_curve_naive(model, d, layers)
    times: dict[str, list[float]] = {k: [] for k in variants}
    for fn in variants.values():  # warm-up on one batch
        fn(data[:1])
    for _ in range(args.repeats):
        for name, fn in variants.items():
            start = clock()
            fn(data)
            times[name].append(clock() - start)

    tokens = [tuple(b.input_ids.shape) for b in data]
    print(
        f"model {args.model} ({n} blocks), {len(test)} items in batches {tokens}, start layers 0..{n - 1}, "
        f"protocols {', '.join(PROTOCOLS)}; {'sorted by length, ' if args.sorted else ''}torch {torch.__version__}, {args.threads} threads, "
        f"{platform.processor() or platform.machine()}; device {describe(device)}, {args.dtype}"
        f"{', random weights' if args.random_weights else ''}"
    )
    # the two forms agree on this device: the first batch's pooled logits at three start layers
    with torch.no_grad():
        first = data[0]
        starts = sorted({0, n // 2, n - 1})
        with capture_inputs(model, starts) as stream:
            last_token_logits(model, first.attention_mask, input_ids=first.input_ids)
        worst = max(
            float(
                (
                    pooled_logits(model, L, stream[L], first, PROTOCOLS, chunked=True).float()
                    - pooled_logits(model, L, stream[L], first, PROTOCOLS, chunked=False).float()
                )
                .abs()
                .max()
            )
            for L in starts
        )
    print(
        f"default on {device.type}: {'chunked' if chunks_by_default(device) else 'one padded batch'}; "
        f"max |chunked - unchunked| pooled logit at layers {starts}: {worst:.2e}"
    )
    # float32 agrees to rounding; bfloat16 / float16 to their ~3 digits on logits of magnitude ~10
    tolerance = 1e-3 if args.dtype == "float32" else 0.25
    if not worst <= tolerance:
        raise SystemExit(f"the chunked and unchunked pooled logits differ by {worst:.2e} (> {tolerance:g})")
    base = statistics.median(times["anchor (3n forwards)"])
    for name, ts in times.items():
        median = statistics.median(ts)
        print(
            f"{name:>22}: median {median:8.2f} s  (min {min(ts):.2f}, n {len(ts)})  ratio to anchor x{median / base:.3f}"
        )


if __name__ == "__main__":
    main()
