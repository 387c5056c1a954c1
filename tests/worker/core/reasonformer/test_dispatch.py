"""Sparse dispatch by instance equals the masked computation with the same weights (eq. 2), in outputs and
in gradients; each module runs only on the instances that chose it."""

from __future__ import annotations

import copy

import pytest
import torch

from tests.worker.core.reasonformer.conftest import reasoning, right_padded, tiny_t5
from worker.core.reasonformer.model import ReasonFormerForConditionalGeneration


def _pair(
    variant: str, top_k: int | None
) -> tuple[ReasonFormerForConditionalGeneration, ReasonFormerForConditionalGeneration]:
    kw = dict(
        variant=variant,
        top_k=top_k,
        module_layers=2 if variant == "shared" else 1,
        adapter_bottleneck=8 if variant == "shared" else None,
    )
    sparse = ReasonFormerForConditionalGeneration.from_t5(tiny_t5(), reasoning(**kw, dispatch="sparse"))
    # adapters start at zero: perturb them so the test sees them
    with torch.no_grad():
        for name, p in sparse.named_parameters():
            if ".adapters." in name:
                p.add_(0.1 * torch.randn_like(p))
    masked = copy.deepcopy(sparse)
    masked.config.reasoning_config = {**sparse.config.reasoning_config, "dispatch": "masked"}
    masked.encoder.reasoner.cfg = masked.config.reasoning
    return sparse.train(), masked.train()


@pytest.mark.parametrize(("variant", "top_k"), [("shared", 2), ("private", 1), ("shared", None)])
def test_sparse_dispatch_equals_masked_outputs_and_gradients(variant: str, top_k: int | None) -> None:
    sparse, masked = _pair(variant, top_k)
    ids, mask = right_padded(B=4)
    labels = torch.randint(2, 40, (4, 5))
    skill_labels = torch.tensor([0, 1, 2, 3])
    outs = []
    for model in (sparse, masked):
        out = model(input_ids=ids, attention_mask=mask, labels=labels, skill_labels=skill_labels)
        out.loss.backward()
        outs.append(out)
    torch.testing.assert_close(outs[0].logits, outs[1].logits, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(outs[0].selected_skills, outs[1].selected_skills)
    grads = dict(masked.named_parameters())
    for name, p in sparse.named_parameters():
        q = grads[name]
        if p.grad is None:
            assert q.grad is None or (q.grad == 0).all(), name
        else:
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-6, msg=name)


def test_a_module_runs_only_on_the_instances_that_chose_it() -> None:
    sparse, _ = _pair("shared", 1)
    seen: dict[int, list[int]] = {}
    for j, module in enumerate(sparse.encoder.reasoner.skill_modules):
        module.register_forward_hook(
            lambda m, args, out, j=j: seen.setdefault(j, []).append(args[0].shape[0])
        )
    ids, mask = right_padded(B=4)
    out = sparse(input_ids=ids, attention_mask=mask, labels=torch.randint(2, 40, (4, 3)))
    for step in range(3):
        chosen = out.selected_skills[:, step, 0].tolist()
        for j in set(chosen):
            assert chosen.count(j) in seen[j]
    assert sum(sum(v) for v in seen.values()) == 4 * 3  # top-1: every instance through one module per step
