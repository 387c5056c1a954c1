"""Tiny ReasonFormer models for the core tests (random T5 weights built locally, no hub)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from transformers import T5ForConditionalGeneration

from worker.core.reasonformer.config import ReasoningConfig, t5_preset


@pytest.fixture(autouse=True)
def _one_thread_and_seed() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    yield
    torch.set_num_threads(threads)


def tiny_t5(num_layers: int = 6, vocab_size: int = 40, attn: str = "eager") -> T5ForConditionalGeneration:
    t5 = T5ForConditionalGeneration(t5_preset("t5-tiny", vocab_size=vocab_size, num_layers=num_layers))
    t5.set_attn_implementation(attn)
    return t5.eval()


def reasoning(**overrides: object) -> ReasoningConfig:
    values: dict[str, object] = dict(
        skills=("a", "b", "c", "general"),
        variant="shared",
        depth=3,
        representation_layers=2,
        module_layers=2,
        top_k=2,
        adapter_bottleneck=8,
        router_hidden=16,
    )
    values.update(overrides)
    return ReasoningConfig(**values)  # type: ignore[arg-type]


def right_padded(B: int = 3, T: int = 7, vocab: int = 40, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """input_ids and attention_mask of a right-padded batch (rows of lengths T, T-3, T-1, ...)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(2, vocab, (B, T), generator=g)
    lengths = [T, T - 3, T - 1, T - 2][:B] + [T] * max(0, B - 4)
    mask = (torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]).long()
    return ids * mask, mask
