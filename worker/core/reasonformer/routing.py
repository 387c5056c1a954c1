"""Skill-routing maths (paper 001, sections 3.2.1 and 3.3): instance pooling, the router's softmax, top-k
sparse activation, and the skill-routing loss L_r. Pure functions of tensors; the router module itself is
in ``router.py``.

Names follow Mixtral's (``router_logits``, ``routing_weights``, ``selected_skills``).
"""

from __future__ import annotations

import torch
from torch import Tensor


def at_least_fp32(t: Tensor) -> Tensor:
    """Router maths in float32 under bf16/fp16 autocast (as Mixtral does); fp32/fp64 stay as they are."""
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


def masked_mean(h: Tensor, mask: Tensor) -> Tensor:
    """Instance pooling for routing: the mean over non-pad tokens (DESIGN.md; section 3.2.1 routes per
    instance, "token-level information is limited").

    h: [B, T, d]; mask: [B, T] (1/True = a real token). Returns [B, d].
    """
    B, T, _ = h.shape
    assert mask.shape == (B, T), f"mask {tuple(mask.shape)} does not match h {tuple(h.shape)}"
    m = mask.to(h.dtype)[:, :, None]  # [B, T, 1]
    count = m.sum(dim=1).clamp(min=1.0)  # [B, 1]: an all-pad row pools to 0, not NaN
    return (h * m).sum(dim=1) / count


def skill_probs(router_logits: Tensor) -> Tensor:
    """Eq. 3 (section 3.2.1): S^i = Softmax(FFN(pooled H^)). router_logits: [B, n] -> probabilities [B, n]."""
    return torch.softmax(at_least_fp32(router_logits), dim=-1)


def top_k_routing(probs: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """Sparse activation (section 3.2.1, "we sparsely activate k reasoning modules with top-k skill routing
    scores"): keep each instance's k largest skill probabilities and renormalise them to sum to 1 (DESIGN.md).

    probs: [B, n]. Returns (routing_weights [B, k], selected_skills [B, k] long), slots by decreasing score.
    With k = n (full activation) every skill is kept with its softmax probability.
    """
    n = probs.shape[-1]
    assert 1 <= k <= n, f"top_k must be in 1..{n}, got {k}"
    top, selected_skills = torch.topk(probs, k, dim=-1)  # [B, k], [B, k]
    routing_weights = top / top.sum(dim=-1, keepdim=True)  # [B, k]
    return routing_weights, selected_skills


def dense_weights(routing_weights: Tensor, selected_skills: Tensor, num_skills: int) -> Tensor:
    """The [B, n] weight matrix of eq. 2 with zeros for skills outside the top-k."""
    B = routing_weights.shape[0]
    out = routing_weights.new_zeros(B, num_skills)
    return out.scatter(1, selected_skills, routing_weights)  # [B, n]


def routing_targets(skill_labels: Tensor, num_skills: int, general: int | None) -> tuple[Tensor, Tensor]:
    """The target distribution of L_r per (instance, step) (section 3.3: "if the current pre-training
    instance focuses on logic ability, it should activate {logic ability, general}"): uniform over {skill,
    general} (DESIGN.md), one-hot on general for a general instance or when there is no general skill.

    skill_labels: [B, S] long, the skill index wanted at each of S steps, -1 = no label (a downstream
    instance, or a step past the end of a composite). Returns (targets [B, S, n], labelled [B, S] bool).
    """
    labelled = skill_labels >= 0  # [B, S]
    targets = torch.zeros(*skill_labels.shape, num_skills, dtype=torch.float32, device=skill_labels.device)
    targets.scatter_(2, skill_labels.clamp(min=0)[..., None], 1.0)  # [B, S, n] one-hot
    if general is not None:
        targets[..., general] = 1.0  # {skill, general}; a general instance has just {general}
    targets = targets / targets.sum(dim=-1, keepdim=True)
    return targets * labelled[..., None], labelled


def skill_routing_loss(router_logits: Tensor, targets: Tensor, labelled: Tensor) -> Tensor:
    """Skill-routing loss L_r (section 3.3: "multi-class cross-entropy loss to guide the pre-training steps
    activate the same skill"): the cross-entropy of the router's dense (pre-top-k) distribution against the
    target, averaged over the labelled instances of each step, then over the steps that have any (DESIGN.md).

        L_r = mean_{s: any labelled} (1 / |B_s|) sum_{b in B_s} - sum_j t[b, s, j] log softmax(z[b, s])_j

    router_logits: [B, S, n]; targets: [B, S, n]; labelled: [B, S] bool. Returns a float scalar (0 when
    nothing is labelled, with a gradient of zeros).
    """
    logp = torch.log_softmax(at_least_fp32(router_logits), dim=-1)  # [B, S, n]
    ce = -(targets.to(logp.dtype) * logp).sum(dim=-1)  # [B, S]
    w = labelled.to(logp.dtype)  # [B, S]
    per_step_count = w.sum(dim=0)  # [S]
    per_step = (ce * w).sum(dim=0) / per_step_count.clamp(min=1.0)  # [S]
    steps = (per_step_count > 0).to(logp.dtype)  # [S]
    return (per_step * steps).sum() / steps.sum().clamp(min=1.0)
