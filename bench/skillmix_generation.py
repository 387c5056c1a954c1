"""Skill-Mix generation: the batched student (batch 8, left padding) against one prompt at a time with the
same model, in tokens/s (goal >= 3x on CPU), and a repeated cell against the first (the on-disk cache of
generations and gradings; goal: the repeat costs < 5% of the first). The student is SmolLM2-135M-Instruct
from the model store when it is there (``make offline``), else a tiny random Llama. Prints; asserts nothing.

    .venv/bin/python bench/skillmix_generation.py                     # SmolLM2-135M, 8 prompts, 48 tokens
    .venv/bin/python bench/skillmix_generation.py --model tiny-llama --tokens 16
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from worker.core.models import load_model
from worker.core.models.store import ALIASES, store_root
from worker.core.skillmix.chat import Sampling, user
from worker.core.skillmix.combinations import sample_combinations
from worker.core.skillmix.hf_chat import HFChat
from worker.core.skillmix.prompts import first_turn
from worker.core.skillmix.skills import load_skills, load_topics
from worker.kinds.skillmix import run
from worker.specs.skillmix import SkillmixSpec
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


def throughput(model: str, prompts: int, tokens: int, batch: int) -> dict[str, Any]:
    lm = load_model(model)
    lm.model.eval()
    combos = sample_combinations(load_skills(), load_topics(), 2, prompts, seed=0)
    convs = [[user(first_turn(c))] for c in combos]
    seeds = list(range(prompts))
    sampling = Sampling(0.7, tokens)
    chat = HFChat(lm.model, lm.tokenizer, model, batch_size=batch)
    chat.complete(convs[:1], seeds[:1], Sampling(0.7, 2))  # warm-up
    start = time.perf_counter()
    batched = chat.complete(convs, seeds, sampling)
    t_batched = time.perf_counter() - start
    single = HFChat(lm.model, lm.tokenizer, model, batch_size=1)
    start = time.perf_counter()
    alone = single.complete(convs, seeds, sampling)
    t_single = time.perf_counter() - start
    # per-row seeded sampling: both modes write the same texts, so they hold the same tokens
    generated = sum(len(lm.tokenizer(str(r), add_special_tokens=False)["input_ids"]) for r in batched)
    return {
        "tokens": generated,
        "batched_s": t_batched,
        "single_s": t_single,
        "same_texts": batched == alone,
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
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=48, help="new tokens per reply")
    ap.add_argument("--combinations", type=int, default=3, help="combinations of the cached-repeat cell")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--no-cell", action="store_true", help="skip the cached-repeat cell")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model = args.model or default_model()
    print(
        f"model {model}, torch {torch.__version__}, {args.threads} threads, {platform.processor() or 'cpu'}"
    )

    t = throughput(model, args.prompts, args.tokens, args.batch)
    rate_b, rate_s = t["tokens"] / t["batched_s"], t["tokens"] / t["single_s"]
    print(f"generation: {args.prompts} prompts x up to {args.tokens} tokens, {t['tokens']} tokens generated")
    print(f"  batched (batch {args.batch}): {t['batched_s']:.1f} s, {rate_b:.1f} tokens/s")
    print(f"  one at a time:      {t['single_s']:.1f} s, {rate_s:.1f} tokens/s")
    print(
        f"  batched / one-at-a-time throughput: {rate_b / rate_s:.2f}x (goal >= 3x); same texts: {t['same_texts']}"
    )

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
