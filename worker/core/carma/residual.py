"""The residual stream of any HF causal LM, read with hooks on its decoder layers, and the logits at each
row's last real token.

Why hooks and not ``output_hidden_states``: in transformers 5.x the last entry of ``hidden_states``
already has the final norm applied, so it is not block L-1's output (REFERENCE.md, "Open points"); a
forward hook on each decoder layer returns exactly the residual stream after that block, for every
family, and keeps only the layers asked for.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Iterable, Iterator
from typing import Any

import torch
from torch import Tensor, nn


def decoder_layers(model: nn.Module) -> nn.ModuleList:
    """The model's list of decoder blocks: the ModuleList of ``config.num_hidden_layers`` modules with the
    shortest path (``model.layers`` for Llama/Qwen2/Gemma, ``transformer.h`` for GPT-2)."""
    config: Any = model.config
    n = int(config.num_hidden_layers)
    found = [
        (name, m)
        for name, m in model.named_modules()
        if isinstance(m, nn.ModuleList) and len(m) == n and n > 0
    ]
    assert found, f"no ModuleList of {n} decoder layers in {type(model).__name__}"
    return min(found, key=lambda item: len(item[0]))[1]


def _hidden_of(output: Any) -> Tensor:
    """A decoder layer returns its hidden states, or a tuple starting with them (older layer classes)."""
    return output[0] if isinstance(output, tuple) else output


@contextlib.contextmanager
def capture_outputs(model: nn.Module, layers: Iterable[int]) -> Iterator[dict[int, Tensor]]:
    """Within the block, every forward records ``out[i]``: the residual stream after block i (0-indexed)
    for each i in ``layers``, [B, T, d], part of the autograd graph."""
    blocks = decoder_layers(model)
    out: dict[int, Tensor] = {}
    handles = []
    for i in sorted(set(layers)):
        assert 0 <= i < len(blocks), f"layer {i} outside 0..{len(blocks) - 1}"

        def hook(module: nn.Module, args: Any, output: Any, i: int = i) -> None:
            out[i] = _hidden_of(output)

        handles.append(blocks[i].register_forward_hook(hook))
    try:
        yield out
    finally:
        for h in handles:
            h.remove()


@contextlib.contextmanager
def capture_inputs(model: nn.Module, layers: Iterable[int]) -> Iterator[dict[int, Tensor]]:
    """Within the block, every forward records ``inp[i]``: the residual stream entering block i (the
    embeddings, with positions or scaling as the family adds them, for i = 0), [B, T, d]."""
    blocks = decoder_layers(model)
    inp: dict[int, Tensor] = {}
    handles = []
    for i in sorted(set(layers)):
        assert 0 <= i < len(blocks), f"layer {i} outside 0..{len(blocks) - 1}"

        def pre_hook(module: nn.Module, args: Any, kwargs: dict[str, Any], i: int = i) -> None:
            inp[i] = args[0] if args else kwargs["hidden_states"]

        handles.append(blocks[i].register_forward_pre_hook(pre_hook, with_kwargs=True))
    try:
        yield inp
    finally:
        for h in handles:
            h.remove()


@functools.cache
def _accepts_logits_to_keep(name: str, forward: Any) -> bool:
    return "logits_to_keep" in inspect.signature(forward).parameters


def last_token_logits(model: nn.Module, attention_mask: Tensor, **inputs: Any) -> Tensor:
    """Logits at each row's last real position of a right-padded batch, [B, V]; ``inputs`` are
    ``input_ids=[B, T]`` or ``inputs_embeds=[B, T, d]``, attention_mask [B, T].

    Only the distinct last positions go through the LM head (``logits_to_keep`` as an index tensor, which
    transformers 5.x models accept), not all T: the full [B, T, V] logits of a 50k-token vocabulary cost
    more than the loss needs.
    """
    B = attention_mask.shape[0]
    last = attention_mask.long().sum(dim=1) - 1  # [B]
    assert bool((last >= 0).all()), "a row of the batch has no real token"
    rows = torch.arange(B, device=attention_mask.device)
    if _accepts_logits_to_keep(type(model).__name__, type(model).forward):
        keep, where = torch.unique(last, return_inverse=True)  # [U], [B]
        logits = model(attention_mask=attention_mask, logits_to_keep=keep, **inputs).logits  # [B, U, V]
        return logits[rows, where]
    logits = model(attention_mask=attention_mask, **inputs).logits  # [B, T, V]
    return logits[rows, last]
