"""Kind ``reasonformer_pretrain``: reasoning-centric pre-training of ReasonFormer (paper 001, section 3.3),
then exact match per skill/program and the per-step routing analysis (section 5.4) on held-out instances.

Metrics: ``loss``, ``lm_loss``, ``routing_loss``, ``lr``, ``grad_norm``, ``router/entropy``,
``router/s{i}/{skill}`` (mean router weight of a skill at step i), ``stop_gate/s{i}``; at evaluation
``eval/{task}``, ``eval/average``, ``routing/skill_match``, ``routing/order_match_trained``,
``routing/order_match_heldout``. Results: ``reasonformer_eval`` (stage pretrain) and ``routing``.
The model and tokenizer are saved to ``<out_dir>/model`` for ``reasonformer_finetune``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from worker.core.reasonformer.build import build_model
from worker.core.reasonformer.config import T5_PRESETS
from worker.core.reasonformer.data.batching import EpochBatches, StreamBatches
from worker.core.reasonformer.data.example import Example
from worker.core.reasonformer.data.jsonl import load_pretrain_jsonl
from worker.core.reasonformer.data.synthetic import PRIMITIVE_NAMES, ExampleStream, SkillSuite, program_name
from worker.core.reasonformer.data.tokenizer import SymbolTokenizer, TextTokenizer, load_tokenizer
from worker.core.reasonformer.evaluate import eval_rng
from worker.core.reasonformer.params import parameter_counts
from worker.kinds.reasonformer._parts import (
    batch_maker,
    fit_evaluate_save,
    reasoning_config,
    set_threads,
    suite_of,
)
from worker.runtime import confined
from worker.specs.reasonformer._parts import PAPER_SKILLS, SYNTHETIC_SKILLS
from worker.specs.reasonformer.reasonformer_pretrain import ReasonFormerPretrainSpec
from worker.tracking.context import RunContext


def synthetic_reasoning(suite: SkillSuite) -> Callable[[str], str | None]:
    trained = {program_name(p) for p in suite.train_programs}

    def reasoning(task: str) -> str | None:
        if task in PRIMITIVE_NAMES:
            return "skill"
        return "composite (trained)" if task in trained else "composite (held out)"

    return reasoning


def split_holdout(examples: list[Example], fraction: float, seed: int) -> tuple[list[Example], list[Example]]:
    """(train, eval): a seeded ``fraction`` of the examples held out (at least one)."""
    order = np.random.default_rng(seed).permutation(len(examples))
    n_eval = max(1, round(fraction * len(examples)))
    held = set(order[:n_eval].tolist())
    return [e for i, e in enumerate(examples) if i not in held], [examples[i] for i in sorted(held)]


def run(spec: ReasonFormerPretrainSpec, ctx: RunContext) -> None:
    data, t = spec.data, spec.train
    set_threads(t, ctx.device)
    torch.manual_seed(spec.seed)
    confined.model_name(spec.model.backbone, "model.backbone", T5_PRESETS)
    if data.tokenizer is not None:
        confined.model_name(data.tokenizer, "data.tokenizer")
    suite: SkillSuite | None = None
    tokenizer: TextTokenizer
    if data.source == "synthetic":
        suite = suite_of(data.suite)
        skills = spec.model.resolved_skills(SYNTHETIC_SKILLS)
        tokenizer = SymbolTokenizer(suite.vocabulary())
        eval_examples = suite.pretrain_eval(eval_rng(data.suite.split_seed, 1), data.eval_per_task)[
            : data.eval_limit
        ]
        reasoning_of = synthetic_reasoning(suite)
    else:
        assert data.path is not None
        # the files the spec names, checked inside the data store before anything loads
        train_file = confined.data_file(data.path, "data.path")
        eval_file = confined.data_file(data.eval_path, "data.eval_path") if data.eval_path else None
        skills = spec.model.resolved_skills(PAPER_SKILLS)
        tokenizer = load_tokenizer(data.tokenizer or spec.model.backbone)
        train_examples = load_pretrain_jsonl(train_file)
        if eval_file is not None:
            eval_examples = load_pretrain_jsonl(eval_file)
        else:
            train_examples, eval_examples = split_holdout(train_examples, data.eval_fraction, spec.seed)
        eval_examples = eval_examples[: data.eval_limit]
        skills_of_data = {s for e in train_examples for s in e.skills}
        unknown = sorted(skills_of_data - set(skills))
        assert not unknown, f"the data has skills {unknown} that the model lacks ({skills})"

        def reasoning_of(task: str) -> str | None:
            return None

    rc = reasoning_config(spec.model, skills)
    model = build_model(
        spec.model.variant,
        spec.model.backbone,
        rc,
        vocab_size=tokenizer.vocab_size,
        dropout=spec.model.dropout,
    )
    depth = rc.depth if rc is not None else 1
    make = batch_maker(tokenizer, skills, depth, data.max_source_length, data.max_target_length)
    if suite is not None:
        stream = ExampleStream(suite.pretrain_example, spec.seed, reserved={e.input for e in eval_examples})
        batches: StreamBatches | EpochBatches = StreamBatches(stream, t.batch_size, make)
    else:
        batches = EpochBatches(train_examples, t.batch_size, spec.seed, make)

    counts = parameter_counts(model)
    ctx.log_params(
        {
            **spec.model_dump(mode="json"),
            "derived": {
                "skills": skills,
                "parameters": counts.total,
                "activated_parameters": counts.activated,
                "eval_examples": len(eval_examples),
                "heldout_programs": [program_name(p) for p in suite.heldout_programs] if suite else [],
            },
        }
    )

    path = fit_evaluate_save(
        ctx,
        model,
        tokenizer,
        batches,
        t,
        eval_examples=eval_examples,
        max_source=data.max_source_length,
        stage="pretrain",
        pretrained=True,
        routing_loss=True,
        cases_per_task=spec.analysis.cases_per_task,
        seed=spec.seed,
        suite=suite,
        modularity=rc.routing_loss_weight > 0 if rc is not None else False,
        freeze="none",
        reasoning_of=reasoning_of,
    )
    if path is not None:
        ctx.log(f"saved the model to {path}")
