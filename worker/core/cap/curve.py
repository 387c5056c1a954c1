"""CAP layer curves on any HF causal LM (paper 003, section 5.1, Figure 2; appendix C.1; REFERENCE.md,
CAP): at start layer L the residual stream entering block L, [B, T, d], is replaced by the pooled word
states [B, W, d]; blocks L.. run on the shorter sequence with new positions 0..W-1 and a causal mask over
W; the prediction is read at the last word group. Accuracy is reported per normalised depth L / (n - 1).

The clean pass records the stream entering every block once; each L reuses it as its prefix, so no
block below L is run again (``cap_curve``; ``cap_curve_naive`` recomputes it, for the tests and the
benchmark). Blocks below L are swapped for a pass-through while the model's own forward runs blocks L..,
so positions, masks (sliding-window layer types included) and the final norm stay the family's own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from worker.core.cap.pooling import PROTOCOLS, Protocol, pool, token_groups
from worker.core.carma.batches import Batch
from worker.core.carma.residual import capture_inputs, decoder_layers, last_token_logits


class _PassThrough(nn.Module):
    """Stands in for a block below the start layer: returns its input unchanged."""

    def forward(self, hidden_states: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return hidden_states


@contextlib.contextmanager
def _start_at(model: nn.Module, start: int, states: Tensor) -> Iterator[None]:
    """Within the block, a forward skips blocks 0..start-1 and feeds ``states`` to block ``start``."""
    blocks = decoder_layers(model)
    assert 0 <= start < len(blocks), f"start layer {start} outside 0..{len(blocks) - 1}"
    saved = [blocks[i] for i in range(start)]

    def feed(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
        if args:
            return (states, *args[1:]), kwargs
        return args, {**kwargs, "hidden_states": states}

    handle = blocks[start].register_forward_pre_hook(feed, with_kwargs=True)
    for i in range(start):
        blocks[i] = _PassThrough()
    try:
        yield
    finally:
        handle.remove()
        for i, block in enumerate(saved):
            blocks[i] = block


def run_from_layer(model: nn.Module, start: int, states: Tensor, attention_mask: Tensor) -> Tensor:
    """Run blocks ``start``.. (then the final norm and LM head) on ``states`` [B, W, d], a right-padded
    sequence with positions 0..W-1. Returns the logits at each row's last real position, [B, V]."""
    with _start_at(model, start, states):
        return last_token_logits(model, attention_mask, inputs_embeds=states)


def length_chunks(lengths: Sequence[int], min_rows: int = 8, slack: float = 0.25) -> list[list[int]]:
    """Row indices grouped into chunks of similar length, longest first. A right-padded row costs its
    padding in every block it passes, and each chunk costs one more call of the model: a chunk takes the
    next longest row while it has fewer than ``min_rows`` rows or its padded size (rows x its longest
    row) stays within ``1 + slack`` of the real tokens it holds."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    chunks: list[list[int]] = []
    real = 0
    for i in order:
        chunk = chunks[-1] if chunks else None
        if chunk is not None:
            longest = lengths[chunk[0]]
            padded = (len(chunk) + 1) * longest
            if len(chunk) < min_rows or padded <= (1 + slack) * (real + lengths[i]):
                chunk.append(i)
                real += lengths[i]
                continue
        chunks.append([i])
        real = lengths[i]
    return chunks


def chunks_by_default(device: torch.device) -> bool:
    """Whether the pooled rows run in chunks of similar length on ``device`` when the caller does not say.
    On a CPU a padded row costs its padding in every block, so chunks win (x0.505 -> x0.395 of the anchor,
    docs/benchmarks.md, "CAP curve"); on a GPU a padded row rides along in parallel and each chunk is one
    more call of the remaining blocks, so one padded batch wins (x0.61 chunked against x0.23 unchunked on an
    H100 and an H200, same document)."""
    return device.type == "cpu"


def pooled_logits(
    model: nn.Module,
    start: int,
    stream: Tensor,
    batch: Batch,
    protocols: Sequence[Protocol],
    chunked: bool | None = None,
) -> Tensor:
    """The last word group's logits [P*B, V] under CAP from start layer ``start``, protocol-major (rows
    p*B..p*B+B-1 are protocol p). The protocols' pooled rows run blocks ``start``.. together, in chunks of
    similar word count (``length_chunks``) so a short definition does not carry the longest one's padding
    through every block; ``chunked=False`` runs them as one padded batch (the tests compare the two);
    None chooses by the stream's device (``chunks_by_default``).
    stream: [B, T, d], the residual stream entering block ``start``."""
    group, num_groups = token_groups(batch.word_ids, batch.attention_mask)  # [B, T], [B]
    pooled = [pool(stream, group, num_groups, p) for p in protocols]  # P x ([B, W, d], [B, W])
    states = torch.cat([s for s, _ in pooled])  # [P*B, W, d]
    mask = torch.cat([m for _, m in pooled])  # [P*B, W]
    if chunked is None:
        chunked = chunks_by_default(states.device)
    if not chunked:
        return run_from_layer(model, start, states, mask)
    lengths = mask.sum(dim=1)  # [P*B]
    out: Tensor | None = None
    for chunk in length_chunks(lengths.tolist()):
        index = torch.tensor(chunk, device=mask.device)  # [C]
        width = int(lengths[index].max())
        logits = run_from_layer(model, start, states[index, :width], mask[index, :width])  # [C, V]
        if out is None:
            out = logits.new_empty(len(mask), logits.shape[-1])  # [P*B, V]
        out[index] = logits
    assert out is not None, "CAP needs at least one row"
    return out


@dataclass
class CapCurves:
    """Correct counts per protocol and start layer, and of the clean (unpooled) forward."""

    num_layers: int
    layers: list[int]
    total: int = 0
    clean_correct: int = 0
    correct: dict[Protocol, dict[int, int]] = field(default_factory=dict)

    def depth(self, layer: int) -> float:
        """Normalised depth of start layer ``layer``: 0 at the first block, 1 at the last."""
        return layer / (self.num_layers - 1) if self.num_layers > 1 else 0.0

    def accuracy(self, protocol: Protocol) -> list[tuple[int, float, float]]:
        """``(layer, normalised depth, accuracy)`` per start layer."""
        n = max(self.total, 1)
        return [(L, self.depth(L), self.correct[protocol][L] / n) for L in self.layers]

    @property
    def clean_accuracy(self) -> float:
        return self.clean_correct / max(self.total, 1)


def _curves(model: nn.Module, layers: Sequence[int], protocols: Sequence[Protocol]) -> CapCurves:
    n = len(decoder_layers(model))
    assert all(0 <= L < n for L in layers), f"CAP start layers {list(layers)} outside 0..{n - 1}"
    return CapCurves(
        n, sorted(set(layers)), correct={p: dict.fromkeys(sorted(set(layers)), 0) for p in protocols}
    )


@torch.no_grad()
def cap_curve(
    model: nn.Module,
    batches: Sequence[Batch],
    layers: Sequence[int],
    protocols: Sequence[Protocol] = PROTOCOLS,
    chunked: bool | None = None,
) -> CapCurves:
    """CAP accuracy for every start layer and protocol. One clean forward per batch records the stream
    entering each start layer; every L reuses it (no recomputation of blocks below L). ``chunked``: the
    pooled rows run in chunks of similar length (``pooled_logits``); False runs one padded batch per L;
    None (the default) chunks on a CPU only (``chunks_by_default``; bench/cap_curve.py times each)."""
    curves = _curves(model, layers, protocols)
    for batch in batches:
        with capture_inputs(model, curves.layers) as stream:
            clean = last_token_logits(model, batch.attention_mask, input_ids=batch.input_ids)  # [B, V]
        curves.total += len(batch)
        curves.clean_correct += int((clean.argmax(dim=-1) == batch.labels).sum())
        for L in curves.layers:
            logits = pooled_logits(model, L, stream[L], batch, protocols, chunked)  # [P*B, V]
            for p, predicted in zip(protocols, logits.argmax(dim=-1).split(len(batch)), strict=True):
                curves.correct[p][L] += int((predicted == batch.labels).sum())
    return curves


@torch.no_grad()
def cap_curve_naive(
    model: nn.Module,
    batches: Sequence[Batch],
    layers: Sequence[int],
    protocols: Sequence[Protocol] = PROTOCOLS,
) -> CapCurves:
    """The same curves with the prefix recomputed: a fresh clean forward for every start layer and
    protocol (the cost the prefix reuse saves; tests and bench/cap_curve.py)."""
    curves = _curves(model, layers, protocols)
    for batch in batches:
        curves.total += len(batch)
        for L in curves.layers:
            for p in protocols:
                with capture_inputs(model, [L]) as stream:
                    clean = last_token_logits(model, batch.attention_mask, input_ids=batch.input_ids)
                predicted = pooled_logits(model, L, stream[L], batch, [p]).argmax(dim=-1)  # [B]
                curves.correct[p][L] += int((predicted == batch.labels).sum())
        curves.clean_correct += int((clean.argmax(dim=-1) == batch.labels).sum())
    return curves
