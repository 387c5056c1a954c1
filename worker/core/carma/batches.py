"""Right-padded batches of encoded examples, and the seeded epoch stream the shared trainer reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from worker.core.carma.spans import NO_WORD
from worker.core.carma.tasks import Encoded


@dataclass
class Batch:
    input_ids: Tensor  # [B, T] long, right-padded with the pad id
    attention_mask: Tensor  # [B, T] long, 1 real / 0 padding
    word_ids: Tensor  # [B, T] long, -1 for no word and for padding
    labels: Tensor  # [B] long, the answer token

    def to(self, device: torch.device | str) -> Batch:
        return Batch(
            *(t.to(device) for t in (self.input_ids, self.attention_mask, self.word_ids, self.labels))
        )

    def __len__(self) -> int:
        return int(self.labels.shape[0])


def collate(items: Sequence[Encoded], pad_id: int) -> Batch:
    assert items, "an empty batch"
    T = max(len(e.input_ids) for e in items)
    B = len(items)
    input_ids = torch.full((B, T), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((B, T), dtype=torch.long)
    word_ids = torch.full((B, T), NO_WORD, dtype=torch.long)
    for b, e in enumerate(items):
        n = len(e.input_ids)
        input_ids[b, :n] = torch.tensor(e.input_ids)
        attention_mask[b, :n] = 1
        word_ids[b, :n] = torch.tensor(e.word_ids)
    labels = torch.tensor([e.label_id for e in items], dtype=torch.long)
    return Batch(input_ids, attention_mask, word_ids, labels)


def batches(items: Sequence[Encoded], batch_size: int, pad_id: int) -> list[Batch]:
    """Evaluation batches in order."""
    return [collate(items[i : i + batch_size], pad_id) for i in range(0, len(items), batch_size)]


class EpochStream:
    """Training batches: each epoch a fresh permutation of the examples (numpy PCG64 seeded by the run's
    seed and the epoch), the last partial batch kept. ``state_dict`` is the position, for exact resume."""

    def __init__(self, items: Sequence[Encoded], batch_size: int, pad_id: int, seed: int) -> None:
        assert items, "no training examples"
        self.items, self.batch_size, self.pad_id, self.seed = list(items), batch_size, pad_id, seed
        self.epoch, self.position = 0, 0
        self._order = self._permutation(0)

    def _permutation(self, epoch: int) -> np.ndarray:
        return np.random.default_rng([self.seed, epoch]).permutation(len(self.items))

    @property
    def steps_per_epoch(self) -> int:
        return -(-len(self.items) // self.batch_size)

    def next_batch(self) -> Batch:
        if self.position >= len(self.items):
            self.epoch, self.position = self.epoch + 1, 0
            self._order = self._permutation(self.epoch)
        index = self._order[self.position : self.position + self.batch_size]
        self.position += len(index)
        return collate([self.items[i] for i in index], self.pad_id)

    def state_dict(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "position": self.position}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.epoch, self.position = int(state["epoch"]), int(state["position"])
        self._order = self._permutation(self.epoch)
