"""Running one backbone block outside its HF stack, with the reasoning adapters inserted.

A block context holds what every block of one forward pass shares, and knows how to run a block of its
backbone:
- ``T5Context``: T5 encoder blocks. Only block 0 of a T5 encoder owns the relative position bias, and in
  transformers 5.x the bias passed between blocks no longer carries the padding mask (DESIGN.md, "HF T5
  pitfall"), so every block run outside ``T5Stack`` gets both: the bias computed by block 0 and the
  extended attention mask.
- ``CausalContext``: pre-norm decoder layers of Llama and Qwen2 (rotary position embeddings, causal
  mask), for the decoder-only extension (``causal.py``).

``ctx.rows(index)`` is the context of a subset of the batch (sparse dispatch by instance, ``dispatch.py``).
Without adapters, ``run`` computes exactly the HF block's forward (tested against HF's T5 and Llama).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from torch import Tensor

from worker.core.reasonformer.adapter import AdapterPair


def _rows(t: Tensor | None, index: Tensor) -> Tensor | None:
    """Rows ``index`` of a per-instance tensor; broadcast tensors (leading dim 1) and None pass through."""
    if t is None or t.shape[0] == 1:
        return t
    return t.index_select(0, index)


class BlockContext(Protocol):
    def rows(self, index: Tensor) -> BlockContext: ...

    def run(self, block: Any, h: Tensor, adapters: AdapterPair | None = None) -> Tensor: ...


@dataclass
class T5Context:
    """What T5 encoder blocks share in one pass: the extended attention mask ([B, 1, T, T], bool or
    additive float, or None without padding; transformers' ``create_bidirectional_mask``) and the relative
    position bias of block 0 ([1, H, T, T])."""

    mask: Tensor | None
    position_bias: Tensor

    def rows(self, index: Tensor) -> T5Context:
        return T5Context(_rows(self.mask, index), self.position_bias)

    def run(self, block: Any, h: Tensor, adapters: AdapterPair | None = None) -> Tensor:
        """``T5Block.forward`` of an encoder block (T5LayerSelfAttention then T5LayerFF, pre-norm, residual
        around each), with the Houlsby adapters after the attention output and after the FFN output,
        inside the residual (paper 001, section 3.2.2; DESIGN.md). h: [B, T, d] -> [B, T, d]."""
        attn_layer, ff_layer = block.layer[0], block.layer[-1]
        attn, _, _ = attn_layer.SelfAttention(
            attn_layer.layer_norm(h), mask=self.mask, position_bias=self.position_bias
        )  # [B, T, d]
        if adapters is not None:
            attn = adapters.attention(attn)
        h = h + attn_layer.dropout(attn)
        y = ff_layer.DenseReluDense(ff_layer.layer_norm(h))  # [B, T, d]
        if adapters is not None:
            y = adapters.ffn(y)
        return h + ff_layer.dropout(y)


@dataclass
class CausalContext:
    """What pre-norm decoder layers (Llama, Qwen2) share in one pass: the causal mask ([B, 1, T, T] or
    None when ``is_causal`` suffices), the rotary embeddings ``(cos, sin)`` ([1, T, D]) and position ids."""

    mask: Tensor | None
    position_embeddings: tuple[Tensor, Tensor]
    position_ids: Tensor

    def rows(self, index: Tensor) -> CausalContext:
        cos, sin = self.position_embeddings
        cos_rows, sin_rows = _rows(cos, index), _rows(sin, index)
        position_ids = _rows(self.position_ids, index)
        assert cos_rows is not None and sin_rows is not None and position_ids is not None
        return CausalContext(_rows(self.mask, index), (cos_rows, sin_rows), position_ids)

    def run(self, block: Any, h: Tensor, adapters: AdapterPair | None = None) -> Tensor:
        """``LlamaDecoderLayer.forward`` (and Qwen2's, the same), with the adapters inside the residual
        after attention and after the MLP. h: [B, T, d] -> [B, T, d]."""
        attn, _ = block.self_attn(
            hidden_states=block.input_layernorm(h),
            attention_mask=self.mask,
            position_ids=self.position_ids,
            position_embeddings=self.position_embeddings,
        )  # [B, T, d]
        if adapters is not None:
            attn = adapters.attention(attn)
        h = h + attn
        y = block.mlp(block.post_attention_layernorm(h))  # [B, T, d]
        if adapters is not None:
            y = adapters.ffn(y)
        return h + y
