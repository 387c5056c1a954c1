"""CARMA's training-step overhead: a CARMA step (task loss + MI + stability on a layer range) against an FT
step (task loss only), same model, same batches, interleaved in one process. Also times a step whose MI
loss is computed the reference code's way, one Python-level InfoNCE term per (pair, layer) (the paper's
Tables 6-7 report x1.3 to x7.6 for the reference code). Goal: CARMA / FT <= 1.15. Prints; asserts nothing.

    .venv/bin/python bench/carma_overhead.py                    # SmolLM2-135M, batch 8, 5 repeats
    .venv/bin/python bench/carma_overhead.py --model tiny-llama --repeats 3 --batches 3   # seconds
    python bench/carma_overhead.py --device cuda --dtype bfloat16 --random-weights   # GPU, no checkpoint
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from _device import DTYPES, add_device_args, bench_model, describe, synced
from torch import Tensor

from worker.core.carma.batches import Batch, collate
from worker.core.carma.datasets import wordnet_idm
from worker.core.carma.losses import mi_loss, positive_pairs, sample_negatives
from worker.core.carma.objective import CarmaConfig, CarmaObjective, default_layer_range
from worker.core.carma.residual import capture_outputs, last_token_logits
from worker.core.carma.tasks import encode, prompt_template, split


def reference_style_mi(hidden: list[Tensor], word_ids: Tensor, mask: Tensor, k: int, tau: float) -> Tensor:
    """MI loss as the reference code computes it (REFERENCE.md): per layer, per sequence, per word of 2+
    tokens, per pair (i < j), fresh negatives and one InfoNCE term, in Python loops (with our fixes: the
    sequence's own spans, no padding negatives)."""
    per_layer = []
    for h in hidden:  # [B, T, d]
        terms = []
        for b in range(h.shape[0]):
            real = [t for t in range(h.shape[1]) if mask[b, t]]
            words: dict[int, list[int]] = {}
            for t in real:
                if word_ids[b, t] >= 0:
                    words.setdefault(int(word_ids[b, t]), []).append(t)
            for w, positions in words.items():
                outside = [t for t in real if int(word_ids[b, t]) != w]
                if len(positions) < 2 or not outside:
                    continue
                for a in range(len(positions)):
                    for p in range(a + 1, len(positions)):
                        i, j = positions[a], positions[p]
                        negs = [outside[int(torch.randint(len(outside), ()))] for _ in range(k)]
                        s_pos = F.cosine_similarity(h[b, i], h[b, j], dim=0) / tau
                        s_neg = torch.stack(
                            [F.cosine_similarity(h[b, i], h[b, m], dim=0) / tau for m in negs]
                        )
                        terms.append(s_pos - torch.logsumexp(torch.cat([s_pos[None], s_neg]), dim=0))
        per_layer.append(torch.stack(terms).mean() if terms else h.sum() * 0)
    return -torch.stack(per_layer).mean()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--batches", type=int, default=4, help="distinct batches, cycled")
    ap.add_argument("--repeats", type=int, default=5, help="rounds of (FT, CARMA, reference-style) steps")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--no-reference", action="store_true", help="skip the reference-style step (slow)")
    add_device_args(ap)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    clock = synced(device, time.perf_counter)

    lm = bench_model(args.model, device, DTYPES[args.dtype], args.random_weights)
    model = lm.model.train()
    layers = default_layer_range(lm.num_layers)
    items, _ = encode(wordnet_idm(("n",)), lm.tokenizer, prompt_template("idm", lm.model_type), 64)
    train = split(items, 42).train[: args.batch_size * args.batches]
    batches = [
        collate(train[i : i + args.batch_size], int(lm.tokenizer.pad_token_id))
        for i in range(0, len(train), args.batch_size)
    ]
    cpu_batches = [b for b in batches if len(b) == args.batch_size][: args.batches]
    batches = [b.to(device) for b in cpu_batches]
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.0)  # lr 0: the weights stay put, the work is real

    ft = CarmaObjective(CarmaConfig(lam=0.0, layers=layers, monitor=False), lm.num_layers)
    carma = CarmaObjective(CarmaConfig(lam=0.2, layers=layers), lm.num_layers)

    def reference_step(batch: Batch) -> Tensor:
        first, last = layers
        with capture_outputs(model, range(first, min(last + 1, lm.num_layers - 1) + 1)) as out:
            logits = last_token_logits(model, batch.attention_mask, input_ids=batch.input_ids)
        task = F.cross_entropy(logits.float(), batch.labels)
        mi = reference_style_mi(
            [out[i] for i in range(first, last + 1)], batch.word_ids, batch.attention_mask, 5, 0.1
        )
        _, stab, _ = carma.regularisers(out, batch)
        return 0.8 * task + 0.2 * (0.2 * mi + 0.3 * stab)

    def step(loss_of: Callable[[Batch], Tensor], batch: Batch) -> float:
        start = clock()
        loss = loss_of(batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return clock() - start

    variants: dict[str, Callable[[Batch], Tensor]] = {
        "ft": lambda b: ft(model, b)[0],
        "carma": lambda b: carma(model, b)[0],
    }
    if not args.no_reference:
        variants["reference-style"] = reference_step
    times: dict[str, list[float]] = {name: [] for name in variants}
    for fn in variants.values():  # warm-up
        step(fn, batches[0])
    for _ in range(args.repeats):
        for batch in batches:
            for name, fn in variants.items():  # interleaved: the same load for each
                times[name].append(step(fn, batch))

    pairs = [len(positive_pairs(b.word_ids, b.attention_mask)[0]) for b in batches]
    print(
        f"model {args.model} ({lm.num_layers} blocks), CARMA layers {layers[0]}..{layers[1]}, batch "
        f"{args.batch_size} x {[tuple(b.input_ids.shape)[1] for b in batches]} tokens, positive pairs per "
        f"batch {pairs}; torch {torch.__version__}, {args.threads} threads, {platform.processor() or platform.machine()}; "
        f"device {describe(device)}, {args.dtype}{', random weights' if args.random_weights else ''}"
    )
    ft_median, ft_min = statistics.median(times["ft"]), min(times["ft"])
    for name, ts in times.items():
        median = statistics.median(ts)
        print(
            f"{name:>16}: median {median * 1000:8.1f} ms/step, min {min(ts) * 1000:8.1f} (n {len(ts)});  "
            f"ratio to ft: median x{median / ft_median:.3f}, min x{min(ts) / ft_min:.3f}"
        )
    vec = mi_check(cpu_batches[0], lm.num_layers)
    print(f"vectorised MI vs reference-style loop on the same negatives: |diff| {vec:.2e}")


def mi_check(batch: Batch, num_layers: int) -> float:
    """The vectorised loss and a loop over the same pairs and negatives agree (the bench's two MI losses
    compute the same quantity; the tests check it exactly)."""
    torch.manual_seed(0)
    hidden = torch.randn(2, *batch.input_ids.shape, 16, dtype=torch.float64)
    b, i, j = positive_pairs(batch.word_ids, batch.attention_mask)
    pairs = sample_negatives(batch.word_ids, batch.attention_mask, b, i, j, 5)
    total = 0.0
    for k in range(hidden.shape[0]):
        terms = []
        for p in range(len(pairs)):
            h = hidden[k, int(pairs.batch[p])]
            a = h[int(pairs.anchor[p])]
            sims = [
                F.cosine_similarity(a, h[int(m)], dim=0) / 0.1
                for m in [pairs.positive[p], *pairs.negatives[p]]
            ]
            s = torch.stack(sims)
            terms.append(float(s[0] - torch.logsumexp(s, dim=0)))
        total += sum(terms) / max(len(terms), 1)
    expected = -total / hidden.shape[0]
    return abs(float(mi_loss(hidden, pairs)) - expected) if not math.isnan(expected) else math.nan


if __name__ == "__main__":
    main()
