"""Device, dtype and model options shared by the benches (carma_overhead, cap_curve, reasonformer_step, moe_layer).

``--device`` (default: cuda when torch sees a GPU, else cpu), ``--dtype`` (float32 | bfloat16) and
``--random-weights``: build the model named by ``--model`` from the config and tokenizer of its store folder
with random weights instead of loading its checkpoint. The compute of a step does not depend on the weights'
values, so step times compare; what it is for is a machine the 540 MB checkpoint cannot reach (the GPU
machine of bench/gpu_all.sh, which gets the config and tokenizer alone). Answers are meaningless then.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch

from worker.core.models import load_model
from worker.core.models.store import ALIASES, LoadedModel, prepare_tokenizer, store_root

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def add_device_args(ap: argparse.ArgumentParser, *, random_weights: bool = True) -> None:
    """``--device`` and ``--dtype``; ``--random-weights`` too for the benches that load a stored model."""
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", choices=tuple(DTYPES), default="float32", help="the model's weights")
    if not random_weights:
        return
    ap.add_argument(
        "--random-weights",
        action="store_true",
        help="an alias's config and tokenizer from the model store, random weights (no checkpoint needed)",
    )


def synced(device: torch.device, clock: Callable[[], float]) -> Callable[[], float]:
    """``clock`` read after the device's queued work is done (CUDA runs asynchronously)."""
    if device.type != "cuda":
        return clock

    def read() -> float:
        torch.cuda.synchronize(device)
        return clock()

    return read


def describe(device: torch.device) -> str:
    if device.type == "cuda":
        return f"{device} ({torch.cuda.get_device_name(device)}, CUDA {torch.version.cuda})"
    return str(device)


def bench_model(name: str, device: torch.device, dtype: torch.dtype, random_weights: bool) -> LoadedModel:
    """The model on ``device`` in ``dtype``: loaded by ``load_model``, or (``random_weights``) built from the
    store folder's config.json and tokenizer with seed 0."""
    if not random_weights:
        lm = load_model(name, dtype=dtype)
    else:
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

        if name not in ALIASES:
            raise SystemExit(f"--random-weights needs a store alias ({', '.join(ALIASES)}), got {name!r}")
        folder = store_root() / name
        if not (folder / "config.json").is_file():
            raise SystemExit(f"--random-weights: no config.json in {folder} (run make offline once)")
        config = AutoConfig.from_pretrained(folder)
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
        tokenizer = prepare_tokenizer(AutoTokenizer.from_pretrained(folder))
        lm = LoadedModel(model, tokenizer, name, "random", str(folder))
    lm.model.to(device)
    return lm
