"""After a short pre-training on the synthetic suite, the router's top skill is the instance's skill far
above chance, and trained composite programs route to their skills in their order (section 5.4's question
with a known answer). Tiny scale, seeded; the longer run's figures are in docs/experiments/reasonformer.md."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from worker.core.reasonformer.analysis import summarize_routing
from worker.core.reasonformer.build import build_model
from worker.core.reasonformer.config import ReasoningConfig
from worker.core.reasonformer.data.batching import StreamBatches, collate
from worker.core.reasonformer.data.synthetic import PRIMITIVE_NAMES, ExampleStream, SkillSuite, program_name
from worker.core.reasonformer.data.tokenizer import SymbolTokenizer
from worker.core.reasonformer.evaluate import predict
from worker.core.reasonformer.training import make_loss_fn
from worker.core.train import TrainConfig, Trainer


@pytest.mark.heavy
def test_router_learns_skills_and_composite_order_on_the_synthetic_suite() -> None:
    suite = SkillSuite()
    tok = SymbolTokenizer(suite.vocabulary())
    skills = (*PRIMITIVE_NAMES, "general")
    rc = ReasoningConfig(
        skills=skills,
        variant="shared",
        depth=3,
        representation_layers=2,
        module_layers=1,
        top_k=2,
        adapter_bottleneck=16,
        router_hidden=64,
    )
    model = build_model("shared", "t5-tiny", rc, vocab_size=tok.vocab_size)
    evals = suite.pretrain_eval(np.random.default_rng(1), 12)
    stream = ExampleStream(suite.pretrain_example, 0, {e.input for e in evals})
    batches = StreamBatches(stream, 32, lambda ex: collate(ex, tok, skills=skills, depth=3))
    cfg = TrainConfig(steps=80, lr=3e-3, warmup_steps=8, weight_decay=0.01, grad_clip=1.0)
    Trainer(model, batches, make_loss_fn(torch.device("cpu"), routing_loss=True), cfg).fit()
    pred = predict(model, evals, tok, batch_size=128, max_new_tokens=1)  # routing only: no need to decode
    routing = {
        r.task: r for r in summarize_routing(pred.examples, pred.probs, pred.stop_gates, skills, "general")
    }
    chance = 1 / 5
    primitive = np.mean([routing[s].match for s in PRIMITIVE_NAMES])
    trained = [routing[program_name(p)] for p in suite.train_programs]
    step1 = np.mean([r.step_match[0] for r in trained])
    step2 = np.mean([r.step_match[1] for r in trained])
    order = np.mean([r.order_match for r in trained])
    print(f"primitive {primitive:.2f} step1 {step1:.2f} step2 {step2:.2f} order {order:.2f}")
    assert primitive >= 0.9, f"primitive skill match {primitive:.2f} (chance {chance})"
    assert step1 >= 0.5 and step2 >= 0.5, f"composite step matches {step1:.2f}, {step2:.2f} (chance {chance})"
    assert order >= 4 * chance**2, f"composite order match {order:.2f} (chance {chance**2:.2f} for two steps)"
