"""Exact-match evaluation (paper 003, section 3, "Evaluation Metrics"; appendix B.4, eq. 11): the
argmax over the whole vocabulary at the answer position must be the answer's token."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from worker.core.carma.batches import batches
from worker.core.carma.residual import last_token_logits
from worker.core.carma.tasks import Encoded


@dataclass
class Evaluation:
    accuracy: float
    loss: float  # mean task cross-entropy
    correct: list[bool]  # per item, in order
    predictions: list[int] = field(default_factory=list)  # per item, the argmax token id


@torch.no_grad()
def evaluate(
    model: nn.Module,
    items: Sequence[Encoded],
    batch_size: int,
    pad_id: int,
    device: torch.device | str = "cpu",
) -> Evaluation:
    was_training = model.training
    model.eval()
    correct: list[bool] = []
    predictions: list[int] = []
    loss_sum = 0.0
    try:
        for batch in batches(items, batch_size, pad_id):
            batch = batch.to(device)
            logits: Tensor = last_token_logits(model, batch.attention_mask, input_ids=batch.input_ids)
            loss_sum += float(F.cross_entropy(logits.float(), batch.labels, reduction="sum"))
            argmax = logits.argmax(dim=-1)
            correct += (argmax == batch.labels).tolist()
            predictions += argmax.tolist()
    finally:
        model.train(was_training)
    n = max(len(items), 1)
    return Evaluation(sum(correct) / n, loss_sum / n, correct, predictions)
