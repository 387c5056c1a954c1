"""The loss function the shared trainer (``worker/core/train.py``) calls: teacher forcing, plus the
skill-routing loss in pre-training (paper 001, section 3.3: "only in the pre-training stage we have the
supervision for the activated skills"; adaptation uses "standard teacher-forcing loss" only)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from worker.core.reasonformer.data.batching import Seq2SeqBatch
from worker.core.reasonformer.model import ReasonFormerForConditionalGeneration
from worker.core.reasonformer.routing import skill_probs
from worker.core.train import Scalar


def make_loss_fn(
    device: torch.device, *, routing_loss: bool
) -> Callable[[nn.Module, Seq2SeqBatch], tuple[Tensor, dict[str, Scalar]]]:
    """loss_fn(model, batch) -> (loss, detached metrics). Metrics: ``lm_loss``; for ReasonFormer also
    ``routing_loss`` (when supervised), ``router/entropy`` (mean over steps, nats), ``router/s{i}/{skill}``
    (mean router weight of a skill at step i) and ``stop_gate/s{i}``."""

    def loss_fn(model: nn.Module, batch: Seq2SeqBatch) -> tuple[Tensor, dict[str, Scalar]]:
        b = batch.to(device)
        kwargs = {}
        core = getattr(model, "_orig_mod", model)  # under torch.compile
        rf = core if isinstance(core, ReasonFormerForConditionalGeneration) else None
        is_rf = rf is not None
        if is_rf and routing_loss:
            kwargs["skill_labels"] = b.skill_labels
        out = model(input_ids=b.input_ids, attention_mask=b.attention_mask, labels=b.labels, **kwargs)
        lm_loss = out.lm_loss if is_rf else out.loss
        metrics: dict[str, Scalar] = {"lm_loss": lm_loss.detach()}
        if rf is not None:
            probs = skill_probs(out.router_logits.detach())  # [B, S, n]
            entropy = -(probs * probs.clamp(min=1e-12).log()).sum(-1).mean()
            metrics["router/entropy"] = entropy
            mean = probs.mean(dim=0)  # [S, n]
            skills = rf.reasoning.skills
            for s in range(mean.shape[0]):
                for j, skill in enumerate(skills):
                    metrics[f"router/s{s}/{skill}"] = mean[s, j]
                if out.stop_gates is not None:
                    metrics[f"stop_gate/s{s}"] = out.stop_gates[:, s].detach().mean()
            if out.routing_loss is not None:
                metrics["routing_loss"] = out.routing_loss.detach()
        return out.loss, metrics

    return loss_fn
