"""Skill-Mix generation: the batched student against one prompt at a time with the same model, in tokens/s
(goal >= 3x at batch 8 on CPU), and a repeated cell against the first (the on-disk cache of generations
and gradings; goal: the repeat costs < 5% of the first). The student is SmolLM2-135M-Instruct from the
model store when it is there (``make offline``), else a tiny random Llama. Prints; asserts nothing.

Side by side in one run, each repeat timing every mode (in a rotating order, so load bursts on a shared
machine hit all alike), medians reported:
- one at a time: plain HF ``generate``, batch 1 (the baseline);
- batched generate: HF ``generate`` at batch 8, left padding (the student before its own loop);
- batched, our loop: ``decode.py`` (the common prefix and duplicate prompts run once, finished rows
  dropped, the KV cache written into room reserved ahead), the student now;
- with ``--ablations``: our loop without the prefix sharing, without dropping finished rows, with HF's
  growing cache (a ``torch.cat`` a layer a step) instead of the reserved room, and with ``F.linear``'s
  kernel in the decode steps instead of the weight-major product (``decode.few_rows_linears``); and the
  baseline given that product too (one row a step: it should gain nothing, so the baseline is not
  handicapped by the kernel our loop picks).
Per-row seeded sampling makes every mode write the same texts (checked), so tokens/s compare directly.
``--generations 3`` asks each combination's prompt three times with three seeds, as a cell does.

    .venv/bin/python bench/skillmix_generation.py --threads 1 --repeats 3     # SmolLM2-135M, 8 prompts
    .venv/bin/python bench/skillmix_generation.py --model tiny-llama --tokens 16 --no-cell
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from worker.core.models import load_model
from worker.core.models.store import ALIASES, store_root
from worker.core.skillmix.chat import Sampling, user
from worker.core.skillmix.combinations import sample_combinations
from worker.core.skillmix.decode import LoopOptions, common_prefix, few_rows_linears
from worker.core.skillmix.hf_chat import HFChat, render_chat
from worker.core.skillmix.prompts import first_turn
from worker.core.skillmix.skills import load_skills, load_topics
from worker.kinds.skillmix.skillmix import run
from worker.specs.skillmix.skillmix import SkillmixSpec
from worker.tracking.context import RunContext


class Collect(RunContext):
    """A RunContext that keeps the result records in memory and drops everything else."""

    def __init__(self, out_dir: Path) -> None:
        self.seed, self.device, self.out_dir = 0, "cpu", out_dir
        self.results: list[Any] = []

    def log_params(self, params: dict[str, Any]) -> None:
        pass

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        pass

    def log_result(self, record: Any) -> None:
        self.results.append(record)

    def log_examples(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        pass

    def progress(self, done: int, total: int, message: str = "") -> None:
        pass

    def should_stop(self) -> bool:
        return False

    def save_checkpoint(self, state: dict[str, Any], step: int) -> None:
        pass

    def load_checkpoint(self) -> tuple[dict[str, Any], int] | None:
        return None


def default_model() -> str:
    name = "smollm2-135m"
    return name if name in ALIASES and (store_root() / name / "config.json").is_file() else "tiny-llama"


class WithWeightMajor:
    """A chat whose every call runs inside ``few_rows_linears``: the baseline given our loop's kernels."""

    def __init__(self, chat: HFChat) -> None:
        self.chat = chat

    def complete(self, convs: Any, seeds: Any, sampling: Sampling) -> Any:
        with few_rows_linears(self.chat.model):
            return self.chat.complete(convs, seeds, sampling)


def modes(lm: Any, model: str, batch: int, ablations: bool) -> dict[str, Any]:
    chat = functools.partial(HFChat, lm.model, lm.tokenizer, model)
    out = {
        "one at a time (generate)": chat(batch_size=1, use_generate=True),
        f"batched generate (batch {batch})": chat(batch_size=batch, use_generate=True),
        f"batched, our loop (batch {batch})": chat(batch_size=batch),
    }
    if ablations:
        out["  our loop, no prefix sharing"] = chat(batch_size=batch, loop=LoopOptions(share_prefix=False))
        out["  our loop, finished rows kept"] = chat(batch_size=batch, loop=LoopOptions(drop_finished=False))
        out["  our loop, growing cache"] = chat(batch_size=batch, loop=LoopOptions(reserve_cache=False))
        out["  our loop, F.linear kernels"] = chat(batch_size=batch, loop=LoopOptions(weight_major=False))
        out["  one at a time, weight-major kernels"] = WithWeightMajor(chat(batch_size=1, use_generate=True))
    return out


def throughput(
    model: str, prompts: int, generations: int, tokens: int, batch: int, repeats: int, ablations: bool
) -> dict[str, Any]:
    lm = load_model(model)
    lm.model.eval()
    combos = sample_combinations(load_skills(), load_topics(), 2, math.ceil(prompts / generations), seed=0)
    convs = [[user(first_turn(c))] for c in combos for _ in range(generations)][:prompts]
    seeds = list(range(prompts))
    sampling = Sampling(0.7, tokens)
    chats = modes(lm, model, batch, ablations)
    for chat in chats.values():  # warm-up
        chat.complete(convs[:1], seeds[:1], Sampling(0.7, 2))
    names = list(chats)
    times: dict[str, list[float]] = {n: [] for n in names}  # wall clock
    cpu: dict[str, list[float]] = {n: [] for n in names}  # this process's CPU time
    texts: dict[str, list[list[Any]]] = {n: [] for n in names}
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start, start_cpu = time.perf_counter(), time.process_time()
            out = chats[name].complete(convs, seeds, sampling)
            times[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
            texts[name].append(out)
    baseline = texts[names[0]][0]
    # the same texts in every mode and repeat: the same tokens, counted once
    generated = sum(len(lm.tokenizer(str(r), add_special_tokens=False)["input_ids"]) for r in baseline)
    ids = [chats[names[2]].tokenize(render_chat(lm.tokenizer, c)) for c in convs]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    batches = [[ids[i] for i in order[s : s + batch]] for s in range(0, len(order), batch)]
    return {
        "tokens": generated,
        "times": times,
        "cpu": cpu,
        "same_texts": {n: all(t == baseline for t in texts[n]) for n in names},
        "prompt_tokens": sum(len(p) for p in ids),
        "shared": [common_prefix(sorted({tuple(p) for p in b})) for b in batches],
        "distinct": [len({tuple(p) for p in b}) for b in batches],
    }


def cached_repeat(model: str, tokens: int, combinations: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        spec = SkillmixSpec.model_validate(
            {
                "student": {"name": model},
                "combinations": combinations,
                "generation": {"max_new_tokens": tokens},
                "cache": {"dir": str(Path(tmp) / "cache")},
            }
        )
        times = []
        cells = []
        for _ in range(2):
            ctx = Collect(Path(tmp))
            start = time.perf_counter()
            run(spec, ctx)
            times.append(time.perf_counter() - start)
            cells.append(ctx.results[0])
    return {
        "first_s": times[0],
        "repeat_s": times[1],
        "first_new": cells[0].new_replies,
        "repeat_new": cells[1].new_replies,
        "repeat_cached": cells[1].cached_replies,
        "same_cell": cells[0].samples == cells[1].samples,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="default: smollm2-135m if in the store, else tiny-llama")
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--generations", type=int, default=1, help="times each combination's prompt is asked")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=48, help="new tokens per reply")
    ap.add_argument("--repeats", type=int, default=3, help="timings per mode; medians are reported")
    ap.add_argument("--ablations", action="store_true", help="also our loop without each of its savings")
    ap.add_argument("--combinations", type=int, default=3, help="combinations of the cached-repeat cell")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--no-cell", action="store_true", help="skip the cached-repeat cell")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model = args.model or default_model()
    print(
        f"model {model}, torch {torch.__version__}, {args.threads} threads, {platform.processor() or 'cpu'}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )

    t = throughput(
        model, args.prompts, args.generations, args.tokens, args.batch, args.repeats, args.ablations
    )
    print(
        f"generation: {args.prompts} prompts ({args.generations} per combination) x up to {args.tokens} "
        f"tokens, {t['tokens']} tokens generated; prompts {t['prompt_tokens']} tokens, common prefix per "
        f"batch {t['shared']} tokens, distinct prompts per batch {t['distinct']}"
    )
    # with one thread, the process's CPU time leaves out the time other processes held the core: the
    # steadier measure on a loaded machine; the wall clock is printed beside it
    for label, key in (("CPU time", "cpu"), ("wall clock", "times")):
        print(f" {label} (median of {args.repeats}; every repeat in brackets), ratio to one at a time:")
        base = statistics.median(next(iter(t[key].values())))
        for name, times in t[key].items():
            median = statistics.median(times)
            runs = ", ".join(f"{x:.1f}" for x in times)
            print(
                f"  {name:38s} {median:6.1f} s ({runs}), {t['tokens'] / median:5.1f} tokens/s, "
                f"x{base / median:.2f} (goal >= 3x)"
            )
    print(
        "  same texts as one at a time: " + ", ".join(f"{n.strip()} {v}" for n, v in t["same_texts"].items())
    )
    print(f"load average at the end {os.getloadavg()[0]:.1f}")

    if args.no_cell:
        return
    c = cached_repeat(model, args.tokens, args.combinations)
    print(
        f"cell (k=2, {args.combinations} combinations x 3 texts x 3 gradings, rules grader, model load included):"
    )
    print(f"  first:  {c['first_s']:.1f} s, {c['first_new']} replies asked")
    print(f"  repeat: {c['repeat_s']:.2f} s, {c['repeat_new']} asked, {c['repeat_cached']} from the cache")
    print(f"  repeat / first: {c['repeat_s'] / c['first_s']:.3f} (goal < 0.05); same cell: {c['same_cell']}")


if __name__ == "__main__":
    main()
