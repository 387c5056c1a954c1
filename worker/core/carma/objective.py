"""One training step's loss for any HF causal LM: the task loss at the answer position plus CARMA's
regularisers on the residual stream of a layer range (paper 003, section 3.2, eq. 8).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from worker.core.carma.batches import Batch
from worker.core.carma.losses import (
    carma_loss,
    mi_loss,
    positive_pairs,
    sample_negatives,
    stability_loss,
    total_loss,
)
from worker.core.carma.residual import capture_outputs, last_token_logits


def default_layer_range(num_layers: int) -> tuple[int, int]:
    """About a third of the depth (paper 003, section 3.2, "Layer Selection": layers 3-4 of 12 and 6-10 of
    24, counted from 1): blocks round(L/4) .. round(L/3), counted from 1, here 0-indexed: (2, 3) for
    L = 12, (5, 7) for 24, (7, 9) for SmolLM2's 30, (0, 0) below 5 blocks."""
    assert num_layers >= 1, f"num_layers must be >= 1, got {num_layers}"
    start = max(0, round(num_layers / 4) - 1)
    return start, max(start, round(num_layers / 3) - 1)


@dataclass(frozen=True)
class CarmaConfig:
    lam: float = 0.2  # lambda of eq. 8 (reference CLI default 0.2); 0 = plain fine-tuning
    gamma: float = 0.2  # weight of L_MI in eq. 7 (reference CLI default)
    eta: float = 0.3  # weight of L_stability in eq. 7 (reference CLI default)
    layers: tuple[int, int] = (0, 0)  # first and last block l..K, inclusive, 0-indexed
    temperature: float = 0.1  # InfoNCE temperature (reference)
    num_negatives: int = 5  # negatives per positive pair (reference)
    monitor: bool = True  # with lam = 0, still compute L_MI and L_stability (no gradient) for the logs

    def __post_init__(self) -> None:
        assert 0.0 <= self.lam <= 1.0, f"lambda must be in [0, 1], got {self.lam}"
        first, last = self.layers
        assert 0 <= first <= last, f"layer range must satisfy 0 <= first <= last, got {self.layers}"


class CarmaObjective:
    """``(model, batch) -> (loss, metrics)`` for the shared trainer. The residual stream of blocks l..K+1 is
    read with hooks (block K+1 only for eq. 6's last pair, when the model has it)."""

    def __init__(self, cfg: CarmaConfig, num_layers: int) -> None:
        first, last = cfg.layers  # l, K of eq. 5-6
        assert last < num_layers, (
            f"layer range {cfg.layers} goes past the model's {num_layers} blocks (0..{num_layers - 1})"
        )
        self.cfg = cfg
        self.mi_layers = list(range(first, last + 1))
        self.stab_layers = list(range(first, min(last + 1, num_layers - 1) + 1))
        self.regularised = cfg.lam > 0
        self.captured = self.regularised or cfg.monitor

    def __call__(self, model: nn.Module, batch: Batch) -> tuple[Tensor, dict[str, Tensor]]:
        cfg = self.cfg
        layers = self.stab_layers if self.captured else []
        with capture_outputs(model, layers) as out:
            logits = last_token_logits(model, batch.attention_mask, input_ids=batch.input_ids)  # [B, V]
        task = F.cross_entropy(logits.float(), batch.labels)
        metrics: dict[str, Tensor] = {
            "task_loss": task.detach(),
            "train_acc": (logits.detach().argmax(dim=-1) == batch.labels).float().mean(),
        }
        if not self.captured:
            return task, metrics
        with torch.set_grad_enabled(self.regularised and torch.is_grad_enabled()):
            mi, stab, n_pairs = self.regularisers(out, batch)
            carma = carma_loss(mi, stab, cfg.gamma, cfg.eta)
        metrics.update(
            mi_loss=mi.detach(), stability_loss=stab.detach(), carma_loss=carma.detach(), mi_pairs=n_pairs
        )
        return total_loss(task, carma, cfg.lam), metrics

    def regularisers(self, out: dict[int, Tensor], batch: Batch) -> tuple[Tensor, Tensor, Tensor]:
        """(L_MI, L_stability, number of positive pairs) from the captured residual stream."""
        mi_hidden = torch.stack([out[i] for i in self.mi_layers])  # [Lr, B, T, d]
        stab_hidden = torch.stack([out[i] for i in self.stab_layers])  # [Lk, B, T, d]
        b, i, j = positive_pairs(batch.word_ids, batch.attention_mask)
        pairs = sample_negatives(batch.word_ids, batch.attention_mask, b, i, j, self.cfg.num_negatives)
        mi = mi_loss(mi_hidden, pairs, self.cfg.temperature)
        stab = stability_loss(stab_hidden, batch.attention_mask)
        return mi, stab, torch.tensor(float(len(pairs)))
