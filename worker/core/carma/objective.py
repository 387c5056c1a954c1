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
    """CARMA's default layer range for a model of ``num_layers`` blocks, returned as blocks counted from 0
    (the convention of every ``layers`` in ReasonLab). Paper 003, section 3.2, "Layer Selection", counts
    from 1: "layers 3-4 in 12-layer models and 6-10 in 24-layer models". The line through both examples,
    counted from 1, runs from layer round(L/4) (halves up) to layer L/2 - 2 (floored, at least the first):
    3..4 of 12 and 6..10 of 24 exactly, i.e. blocks (2, 3) and (5, 9) here; 7..12 for SmolLM2's 30 blocks;
    a single block (0, 0) below 5 blocks."""
    if num_layers < 1:
        raise ValueError(f"num_layers must be >= 1, got {num_layers!r}")
    first = max(1, (num_layers + 2) // 4)  # counted from 1: round(L/4), halves up
    last = max(first, num_layers // 2 - 2)  # counted from 1
    return first - 1, last - 1


def _check_range(name: str, layers: tuple[int, int]) -> None:
    first, last = layers
    if not 0 <= first <= last:
        raise ValueError(f"{name} must satisfy 0 <= first <= last (blocks counted from 0), got {layers}")


@dataclass(frozen=True)
class CarmaConfig:
    lam: float = 0.2  # lambda of eq. 8 (reference CLI default 0.2); 0 = plain fine-tuning
    gamma: float = 0.2  # weight of L_MI in eq. 7 (reference CLI default)
    eta: float = 0.3  # weight of L_stability in eq. 7 (reference CLI default)
    layers: tuple[int, int] = (
        0,
        0,
    )  # l..K of eq. 5 (and of eq. 6 unless stability_layers), inclusive, from 0
    # l..K of eq. 6 when it differs from the MI range (appendix B.3: Llama-3B stops stability at layer 8
    # and MI at 12); None = ``layers``
    stability_layers: tuple[int, int] | None = None
    temperature: float = 0.1  # InfoNCE temperature (reference)
    num_negatives: int = 5  # negatives per positive pair (reference)
    monitor: bool = True  # with lam = 0, still compute L_MI and L_stability (no gradient) for the logs

    def __post_init__(self) -> None:
        # ValueErrors, not asserts: the checks must hold under ``python -O`` too
        if not 0.0 <= self.lam <= 1.0:
            raise ValueError(f"lambda must be in [0, 1] (paper 003, eq. 8), got {self.lam!r}")
        _check_range("layer range", self.layers)
        if self.stability_layers is not None:
            _check_range("stability layer range", self.stability_layers)


class CarmaObjective:
    """``(model, batch) -> (loss, metrics)`` for the shared trainer. The residual stream of blocks l..K+1 is
    read with hooks (block K+1 only for eq. 6's last pair, when the model has it)."""

    def __init__(self, cfg: CarmaConfig, num_layers: int) -> None:
        first, last = cfg.layers  # l, K of eq. 5
        s_first, s_last = cfg.stability_layers or cfg.layers  # l, K of eq. 6
        if max(last, s_last) >= num_layers:
            raise ValueError(
                f"layer range {cfg.layers} (stability {cfg.stability_layers or cfg.layers}) goes past the "
                f"model's {num_layers} blocks (0..{num_layers - 1})"
            )
        self.cfg = cfg
        self.mi_layers = list(range(first, last + 1))
        self.stab_layers = list(range(s_first, min(s_last + 1, num_layers - 1) + 1))
        self.captured_layers = sorted(set(self.mi_layers) | set(self.stab_layers))
        self.regularised = cfg.lam > 0
        self.captured = self.regularised or cfg.monitor

    def __call__(self, model: nn.Module, batch: Batch) -> tuple[Tensor, dict[str, Tensor]]:
        cfg = self.cfg
        layers = self.captured_layers if self.captured else []
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
