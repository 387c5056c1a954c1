"""Batches of examples as tensors, and the seeded streams the shared trainer draws them from
(``worker/core/train.py``: ``next_batch``, ``state_dict``, ``load_state_dict`` for exact resume)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from worker.core.reasonformer.data.example import Example
from worker.core.reasonformer.data.tokenizer import TextTokenizer


@dataclass
class Seq2SeqBatch:
    input_ids: Tensor  # [B, T] right-padded
    attention_mask: Tensor  # [B, T]
    labels: Tensor  # [B, T_out], -100 on padding
    skill_labels: Tensor  # [B, S] skill index per step, -1 = none
    examples: list[Example]

    def to(self, device: torch.device) -> Seq2SeqBatch:
        return Seq2SeqBatch(
            self.input_ids.to(device),
            self.attention_mask.to(device),
            self.labels.to(device),
            self.skill_labels.to(device),
            self.examples,
        )


def pad(rows: Sequence[Sequence[int]], value: int) -> Tensor:
    """[len(rows), longest] long, right-padded with ``value``."""
    width = max(len(r) for r in rows)
    out = torch.full((len(rows), width), value, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r, dtype=torch.long)
    return out


def skill_label_row(skills: Sequence[str], names: Sequence[str], depth: int) -> list[int]:
    """Skill index per step: one skill -> every step (the paper's pre-training); several -> step i gets
    skill i and later steps -1; none -> all -1."""
    index = {s: i for i, s in enumerate(names)}
    missing = [s for s in skills if s not in index]
    assert not missing, f"skills {missing} are not among the model's skills {list(names)}"
    if len(skills) == 1:
        return [index[skills[0]]] * depth
    labels = [index[s] for s in skills[:depth]]
    return labels + [-1] * (depth - len(labels))


def collate(
    examples: Sequence[Example],
    tokenizer: TextTokenizer,
    *,
    skills: Sequence[str] = (),
    depth: int = 1,
    max_source: int = 512,
    max_target: int = 128,
) -> Seq2SeqBatch:
    sources = [tokenizer.encode(e.input, max_source) for e in examples]
    targets = [tokenizer.encode(e.output, max_target) for e in examples]
    input_ids = pad(sources, tokenizer.pad_token_id)
    attention_mask = (
        torch.arange(input_ids.shape[1])[None, :] < torch.tensor([len(s) for s in sources])[:, None]
    ).long()
    labels = pad(targets, -100)
    if skills:
        skill_labels = torch.tensor(
            [skill_label_row(e.skills, skills, depth) for e in examples], dtype=torch.long
        )
    else:
        skill_labels = torch.full((len(examples), depth), -1, dtype=torch.long)
    return Seq2SeqBatch(input_ids, attention_mask, labels, skill_labels, list(examples))


class StreamBatches:
    """Batches from an endless example stream (the synthetic suite); its state is the stream's."""

    def __init__(self, stream: Any, batch_size: int, make: Callable[[list[Example]], Seq2SeqBatch]) -> None:
        self.stream, self.batch_size, self.make = stream, batch_size, make

    def next_batch(self) -> Seq2SeqBatch:
        return self.make(self.stream.take(self.batch_size))

    def state_dict(self) -> dict[str, Any]:
        return self.stream.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.stream.load_state_dict(state)


class EpochBatches:
    """Batches from a finite example list: a fresh seeded shuffle every epoch (the paper trains for
    epochs, appendix B). The state is (epoch, position, generator state)."""

    def __init__(
        self,
        examples: Sequence[Example],
        batch_size: int,
        seed: int,
        make: Callable[[list[Example]], Seq2SeqBatch],
    ) -> None:
        assert examples, "no training examples"
        self.examples, self.batch_size, self.make = list(examples), batch_size, make
        self.rng = np.random.default_rng(seed)
        self.epoch, self.position = 0, 0
        self.order = self.rng.permutation(len(self.examples))

    def next_batch(self) -> Seq2SeqBatch:
        picked: list[Example] = []
        while len(picked) < self.batch_size:
            if self.position >= len(self.order):
                self.epoch += 1
                self.position = 0
                self.order = self.rng.permutation(len(self.examples))
            take = self.order[self.position : self.position + self.batch_size - len(picked)]
            picked += [self.examples[i] for i in take]
            self.position += len(take)
        return self.make(picked)

    def state_dict(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "position": self.position,
            "order": self.order.tolist(),
            "bit_generator": self.rng.bit_generator.state,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.epoch, self.position = int(state["epoch"]), int(state["position"])
        self.order = np.asarray(state["order"], dtype=np.int64)
        self.rng.bit_generator.state = state["bit_generator"]


def chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
