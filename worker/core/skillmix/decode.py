"""Our own batched decoding loop for the HF student (``hf_chat.py``), in place of ``model.generate``.

What ``generate`` does not do on its own and a Skill-Mix batch gains from (docs/benchmarks.md,
"Skill-Mix generation"):

1. **The shared prefix is computed once.** The prompts of a batch start alike (the chat template's system
   part, the instruction's opening words) and a cell asks each prompt several times (``generations`` texts
   per combination). The prefill runs the batch's longest common token prefix once at batch 1, expands
   its KV cache to the distinct prompts, runs their suffixes (left-padded, the pads placed BETWEEN the
   prefix and the suffix, masked out, with explicit positions so each row sees the positions it has
   alone), then copies each distinct prompt's cache to the rows that share it. On a CPU the prefill is
   compute-bound: every prompt token not run is time saved.
2. **Finished rows leave the batch.** A row that emits a stop token is removed from the cache, the mask,
   the positions and the samplers, so later steps cost less.
3. **The KV cache is written into room reserved ahead** (``ReservedLayer``: the prompt plus the new
   tokens), not concatenated into a fresh tensor a layer a step as ``DynamicCache`` does.
4. **A decode step's linear layers take the weight-major product** (``few_rows_linears``): on a CPU,
   ``F.linear``'s ``x @ W.T`` for a few rows goes to a BLAS kernel that barely uses a second thread (a
   576 x 49,152 LM head at 8 rows: 39 ms on two threads against ``(W @ x.T).T``'s 10 ms, same machine).

Sampling is the student's per-row seeded draw (``RowSampler``): a reply depends on its own seed, not on
its batch; temperature 0 is greedy (argmax). ``unsupported`` says when a model cannot take the scheme;
the student then falls back to ``generate``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import torch
from torch import nn
from transformers import DynamicCache, PreTrainedModel
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

from worker.core.models import input_device

# Attention implementations whose masking takes an arbitrary 0/1 padding mask (pads in the middle of a row)
# and that the tests compare against a run without padding; others (flash attention's varlen kernels, ...)
# are left to ``generate``.
_ATTENTION = ("eager", "sdpa")
_FORWARD_ARGUMENTS = ("input_ids", "attention_mask", "position_ids", "past_key_values", "use_cache")


class RowSampler:
    """One seeded generator per row: a row's next token is drawn from softmax(logits / T) with its own
    generator, so what it draws does not depend on the other rows of its batch."""

    def __init__(self, seeds: Sequence[int], temperature: float, device: torch.device) -> None:
        assert temperature > 0, f"sampling needs a temperature > 0, got {temperature}"
        self.temperature = temperature
        self.device = device
        self.generators = [torch.Generator(device=device).manual_seed(int(s)) for s in seeds]

    def draw(self, logits: torch.Tensor) -> torch.Tensor:
        """logits [B, V] (row i belongs to generator i) -> the drawn tokens [B], on the logits' device. The
        draw happens on the generators' device: a model spread over several devices may give its logits
        on another one than its inputs."""
        rows = logits.shape[0]
        assert len(self.generators) == rows, f"{rows} rows for {len(self.generators)} generators"
        probs = torch.softmax(logits.float().to(self.device) / self.temperature, dim=-1)  # [B, V]
        drawn = [torch.multinomial(probs[i], 1, generator=g) for i, g in enumerate(self.generators)]
        return torch.cat(drawn).to(logits.device)

    def keep(self, rows: Sequence[int]) -> None:
        """Only these rows go on (in this order): the others' generators are dropped."""
        self.generators = [self.generators[i] for i in rows]


def stop_tokens(model: PreTrainedModel, eos_token_id: int | None) -> set[int]:
    """What ends a reply: the generation config's ``eos_token_id`` (an id or a list, what ``generate``
    stops on) and the tokenizer's end-of-sequence token."""
    configured = model.generation_config.eos_token_id
    ids = {configured} if isinstance(configured, int) else set(configured or ())
    if eos_token_id is not None:
        ids.add(int(eos_token_id))
    return ids


def _shaping_settings(model: PreTrainedModel) -> list[str]:
    """The generation-config settings with which ``generate`` would change the greedy scores or the
    search (our loop applies none of them)."""
    gc = model.generation_config
    out = []
    for name, inactive in (
        ("guidance_scale", (None, 1, 1.0)),
        ("sequence_bias", (None,)),
        ("repetition_penalty", (None, 1, 1.0)),
        ("encoder_repetition_penalty", (None, 1, 1.0)),
        ("no_repeat_ngram_size", (None, 0)),
        ("bad_words_ids", (None,)),
        ("min_length", (None, 0)),
        ("min_new_tokens", (None, 0)),
        ("forced_bos_token_id", (None,)),
        ("forced_eos_token_id", (None,)),
        ("remove_invalid_values", (None, False)),
        ("exponential_decay_length_penalty", (None,)),
        ("suppress_tokens", (None,)),
        ("begin_suppress_tokens", (None,)),
        ("num_beams", (None, 1)),
    ):
        if getattr(gc, name, None) not in inactive:
            out.append(name)
    return out


def unsupported(model: PreTrainedModel, longest: int) -> str | None:
    """Why the model cannot run our loop for sequences up to ``longest`` cache positions (the padded
    prompt plus the new tokens), or None when it can."""
    config = model.config
    if config.is_encoder_decoder:
        return "an encoder-decoder model"
    names = inspect.signature(model.forward).parameters
    missing = [a for a in _FORWARD_ARGUMENTS if a not in names]
    if missing:
        return f"its forward takes no {', '.join(missing)}"
    attention = getattr(config, "_attn_implementation", None) or "eager"
    if attention not in _ATTENTION:
        return f"attention implementation {attention!r}"
    shaping = _shaping_settings(model)
    if shaping:
        return f"its generation config sets {', '.join(shaping)}"
    for layer in DynamicCache(config=config).layers:
        if type(layer) is DynamicSlidingWindowLayer:
            # the window counts cache positions, pads included: a row would see fewer of its own tokens
            # than alone once the window is reached; below it, the window changes nothing
            if longest >= layer.sliding_window:
                return f"a sliding window of {layer.sliding_window} within {longest} positions"
        elif type(layer) is not DynamicLayer:
            return f"a {type(layer).__name__} cache layer"
    return None


class ReservedLayer(DynamicLayer):
    """A layer's KV cache written into room reserved ahead (the prompt plus the new tokens), instead of
    ``DynamicLayer``'s ``torch.cat`` of the whole cache at every step: at batch 8 on a CPU that copy (a
    fresh buffer a layer a step) took ~0.04 s of a ~0.19 s decode step (SmolLM2-135M, ~200 positions;
    docs/benchmarks.md, "Skill-Mix generation"). ``keys``/``values`` are views of the written part, as
    ``DynamicLayer``'s are its whole tensors; more than reserved grows the room (doubling)."""

    def __init__(self, reserve: int) -> None:
        super().__init__()
        self.reserve = reserve
        self._keys: torch.Tensor | None = None  # [B, heads, room, head dim]
        self._values: torch.Tensor | None = None
        self._length = 0

    def _view(self) -> tuple[torch.Tensor, torch.Tensor]:
        assert self._keys is not None and self._values is not None
        keys, values = self._keys[..., : self._length, :], self._values[..., : self._length, :]
        self.keys, self.values = keys, values
        return keys, values

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: object, **kwargs: object
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        end = self._length + key_states.shape[-2]
        keys, values = self._keys, self._values
        if keys is None or values is None or end > keys.shape[-2]:
            room = max(end, self.reserve, 2 * (keys.shape[-2] if keys is not None else 0))
            grown_keys = key_states.new_empty(*key_states.shape[:-2], room, key_states.shape[-1])
            grown_values = value_states.new_empty(*value_states.shape[:-2], room, value_states.shape[-1])
            if keys is not None and values is not None and self._length:
                grown_keys[..., : self._length, :] = keys[..., : self._length, :]
                grown_values[..., : self._length, :] = values[..., : self._length, :]
            keys, values = self._keys, self._values = grown_keys, grown_values
        keys[..., self._length : end, :] = key_states
        values[..., self._length : end, :] = value_states
        self._length = end
        return self._view()

    def batch_repeat_interleave(self, repeats: int) -> None:
        if self._keys is not None and self._values is not None:
            self._keys = self._keys.repeat_interleave(repeats, dim=0)
            self._values = self._values.repeat_interleave(repeats, dim=0)
            self._view()

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        if self._keys is not None and self._values is not None:
            self._keys, self._values = self._keys[indices, ...], self._values[indices, ...]
            self._view()

    def crop(self, tokens_to_remove: int) -> None:
        super().crop(tokens_to_remove)  # validates; then the written part shrinks
        if self._keys is not None and tokens_to_remove < 0:
            self._length = max(self._length + tokens_to_remove, 0)
            self._view()

    def reset(self) -> None:
        self._keys = self._values = None
        self._length = 0
        super().reset()


def reserved_cache(model: PreTrainedModel, reserve: int) -> DynamicCache:
    """The model's ``DynamicCache`` with each plain ``DynamicLayer`` replaced by a ``ReservedLayer`` of
    ``reserve`` positions (sliding-window and other layers kept as they are)."""
    cache = DynamicCache(config=model.config)
    cache.layers = [
        ReservedLayer(reserve) if type(layer) is DynamicLayer else layer for layer in cache.layers
    ]
    return cache


# the most rows (batch x positions) a patched linear layer takes the weight-major product for: a decode
# step's rows; a prompt's many rows keep F.linear, whose kernel is the faster one there
FEW_ROWS = 32


def _weight_major(
    module: nn.Linear, stock: Callable[[torch.Tensor], torch.Tensor]
) -> Callable[..., torch.Tensor]:
    """``module``'s forward for a few rows as ``(W @ x.T).T`` (+ bias), the same product as ``F.linear``'s
    ``x @ W.T`` (summed in another order), made contiguous for the ``view``s that follow it."""
    weight, bias = module.weight, module.bias

    def forward(x: torch.Tensor) -> torch.Tensor:
        rows = x.numel() // x.shape[-1] if x.shape[-1] else 0
        if not 0 < rows <= FEW_ROWS or x.dtype != weight.dtype or x.device != weight.device:
            return stock(x)
        flat = x.reshape(rows, x.shape[-1]).t()  # [in, rows]
        out = torch.mm(weight, flat) if bias is None else torch.addmm(bias[:, None], weight, flat)
        return out.t().contiguous().view(*x.shape[:-1], weight.shape[0])

    return forward


@contextmanager
def few_rows_linears(model: PreTrainedModel) -> Iterator[int]:
    """Within the block, the model's plain float32 CPU ``nn.Linear`` layers compute up to ``FEW_ROWS`` rows
    as ``(W @ x.T).T`` (``_weight_major``), more as before; yields how many layers were patched. Left as
    they are: subclasses (quantised layers), other dtypes and devices, layers whose forward is already
    replaced (accelerate's offload hooks). Restored on exit."""
    patched = [
        m
        for m in model.modules()
        if type(m) is nn.Linear
        and m.weight.device.type == "cpu"
        and m.weight.dtype == torch.float32
        and "forward" not in m.__dict__
        and not hasattr(m, "_hf_hook")
    ]
    for m in patched:
        m.forward = _weight_major(m, m.forward)  # type: ignore[method-assign]
    try:
        yield len(patched)
    finally:
        for m in patched:
            del m.forward


@dataclass
class Prefill:
    """The batch after its prompts: every row ready for its first new token."""

    cache: DynamicCache  # [B, heads, L, head dim] per layer
    mask: torch.Tensor  # [B, L] 1 where a row has a token, 0 on its pads
    positions: torch.Tensor  # [B] the position of each row's next token (its prompt's length)
    logits: torch.Tensor  # [B, V] float32, each row's scores for its first new token
    shared: int  # the common prefix's tokens, run once at batch 1
    distinct: int  # distinct prompts whose suffixes were run


_KEEPS_LOGITS: dict[type, bool] = {}


def _keeps_logits(model: PreTrainedModel) -> bool:
    """Whether the model's forward takes ``logits_to_keep`` (asked once per model class, not a step)."""
    known = _KEEPS_LOGITS.get(type(model))
    if known is None:
        known = _KEEPS_LOGITS[type(model)] = "logits_to_keep" in inspect.signature(model.forward).parameters
    return known


def _forward(model: PreTrainedModel, **inputs: torch.Tensor | DynamicCache) -> torch.Tensor:
    """One step of the model with its cache -> the last position's logits [B, V] in float32 (only the
    last position's when the model can skip the others: the LM head over a whole prompt is wasted)."""
    if _keeps_logits(model):
        out = model(**inputs, use_cache=True, logits_to_keep=1)
    else:
        out = model(**inputs, use_cache=True)
    return out.logits[:, -1, :].float()


def common_prefix(prompts: Sequence[Sequence[int]]) -> int:
    """The length of the prompts' longest common prefix, leaving every prompt at least one token of its
    own (a row's first logits come from its own last token)."""
    shared = min(len(p) for p in prompts) - 1
    for i in range(shared):
        if any(p[i] != prompts[0][i] for p in prompts):
            return i
    return max(shared, 0)


def prefill(
    model: PreTrainedModel,
    prompts: Sequence[Sequence[int]],
    pad_token_id: int,
    share: bool = True,
    reserve: int | None = None,
) -> Prefill:
    """Runs the prompts (token ids, no padding): their common prefix once and each distinct prompt once
    (``share=False``: every prompt whole, left-padded, as ``generate`` does). ``reserve``: the new tokens
    to come, whose cache room is reserved now (``ReservedLayer``); None: ``DynamicCache``'s growing layers."""
    assert prompts and all(prompts), "prefill needs at least one prompt, each of at least one token"
    device = input_device(model)
    distinct: list[tuple[int, ...]] = []
    first: dict[tuple[int, ...], int] = {}
    row_to_distinct = []
    for p in prompts:
        key = tuple(int(t) for t in p)
        if key not in first or not share:
            first[key] = len(distinct)
            distinct.append(key)
        row_to_distinct.append(first[key])
    shared = common_prefix(distinct) if share else 0

    suffixes = [p[shared:] for p in distinct]
    width = max(len(s) for s in suffixes)
    cache = (
        DynamicCache(config=model.config)
        if reserve is None
        else reserved_cache(model, shared + width + reserve)
    )
    if shared > 0:
        _forward(
            model,
            input_ids=torch.tensor([distinct[0][:shared]], device=device),
            attention_mask=torch.ones(1, shared, dtype=torch.long, device=device),
            position_ids=torch.arange(shared, device=device)[None],
            past_key_values=cache,
        )
        cache.batch_repeat_interleave(len(distinct))  # [1, ...] -> [U, ...]

    # the suffixes, left-padded to the longest: the pads sit between the prefix and each suffix
    ids = torch.full((len(suffixes), width), pad_token_id, dtype=torch.long)  # [U, S]
    mask = torch.zeros(len(suffixes), shared + width, dtype=torch.long)  # [U, P + S]
    mask[:, :shared] = 1
    for i, s in enumerate(suffixes):
        ids[i, width - len(s) :] = torch.tensor(s)
        mask[i, shared + width - len(s) :] = 1
    ids, mask = ids.to(device), mask.to(device)
    # each token at the position it has in its own unpadded prompt (a pad repeats the one before it)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, shared:]  # [U, S]
    logits = _forward(
        model, input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache
    )  # [U, V]

    # batch indices stay on the CPU: they may index a tensor on any device (a model spread over several
    # devices keeps each layer's cache on that layer's device)
    index = torch.tensor(row_to_distinct)
    if len(distinct) < len(prompts):  # else row i is distinct prompt i
        cache.batch_select_indices(index)  # [U, ...] -> [B, ...]
    lengths = torch.tensor([len(p) for p in prompts], device=device)
    return Prefill(cache, mask[index], lengths, logits[index], shared, len(distinct))


@dataclass(frozen=True)
class LoopOptions:
    """What the loop does beyond ``generate``; switched off one at a time, they measure what each saves
    (bench/skillmix_generation.py)."""

    share_prefix: bool = True  # the common prefix and duplicate prompts run once
    drop_finished: bool = True  # a finished row leaves the batch
    reserve_cache: bool = True  # the KV cache written into room reserved ahead, not concatenated a step
    weight_major: bool = True  # a decode step's linear layers as (W @ x.T).T on the CPU (few_rows_linears)


@torch.no_grad()
def decode(
    model: PreTrainedModel,
    prompts: Sequence[Sequence[int]],
    seeds: Sequence[int],
    temperature: float,
    max_new_tokens: int,
    stop: set[int],
    pad_token_id: int,
    options: LoopOptions = LoopOptions(),
) -> list[list[int]]:
    """The new tokens of each prompt (the stop token that ended a row included, as ``generate`` keeps
    it): greedy at temperature 0, else each row drawn with its own seed."""
    assert len(prompts) == len(seeds), f"{len(prompts)} prompts, {len(seeds)} seeds"
    out: list[list[int]] = [[] for _ in prompts]
    if not prompts or max_new_tokens <= 0:
        return out
    with few_rows_linears(model) if options.weight_major else nullcontext():
        device = input_device(model)
        reserve = max_new_tokens if options.reserve_cache else None
        state = prefill(model, prompts, pad_token_id, share=options.share_prefix, reserve=reserve)
        cache, mask, positions, logits = state.cache, state.mask, state.positions, state.logits
        sampler = RowSampler(seeds, temperature, device) if temperature > 0 else None
        alive = list(range(len(prompts)))  # batch row -> its prompt
        finished = [False] * len(prompts)
        for step in range(max_new_tokens):
            tokens = sampler.draw(logits) if sampler is not None else logits.argmax(dim=-1)  # [b]
            for row, token in zip(alive, tokens.tolist(), strict=True):
                if not finished[row]:
                    out[row].append(int(token))
                    finished[row] = int(token) in stop
            if step == max_new_tokens - 1 or all(finished):
                break
            if options.drop_finished and any(finished[row] for row in alive):
                kept = [i for i, row in enumerate(alive) if not finished[row]]
                keep = torch.tensor(kept)  # on the CPU, as in prefill
                cache.batch_select_indices(keep)
                mask, positions, tokens = mask[keep], positions[keep], tokens[keep]
                alive = [alive[i] for i in kept]
                if sampler is not None:
                    sampler.keep(kept)
            mask = torch.cat([mask, mask.new_ones(mask.shape[0], 1)], dim=-1)  # [b, L + 1]
            logits = _forward(
                model,
                input_ids=tokens[:, None],
                attention_mask=mask,
                position_ids=positions[:, None],
                past_key_values=cache,
            )
            positions = positions + 1
        return out
