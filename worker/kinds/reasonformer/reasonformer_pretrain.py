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
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from worker.core.reasonformer.build import build_model
from worker.core.reasonformer.config import T5_PRESETS, ReasoningConfig
from worker.core.reasonformer.data.batching import EpochBatches, StreamBatches
from worker.core.reasonformer.data.example import Example
from worker.core.reasonformer.data.jsonl import load_pretrain_jsonl
from worker.core.reasonformer.data.synthetic import PRIMITIVE_NAMES, ExampleStream, SkillSuite, program_name
from worker.core.reasonformer.data.tokenizer import SymbolTokenizer, TextTokenizer, load_tokenizer
from worker.core.reasonformer.evaluate import eval_rng
from worker.core.reasonformer.params import parameter_counts
from worker.kinds.reasonformer.common.data import batch_maker, suite_of
from worker.kinds.reasonformer.common.evaluation import Evaluation
from worker.kinds.reasonformer.common.model import reasoning_config
from worker.kinds.reasonformer.common.pipeline import fit_evaluate_save
from worker.kinds.reasonformer.common.provenance import Provenance
from worker.kinds.reasonformer.common.routing_record import SuiteAnalysis
from worker.kinds.reasonformer.common.training import Training, set_threads, train_config
from worker.runtime import confined
from worker.specs.reasonformer.common.skills import PAPER_SKILLS, SYNTHETIC_SKILLS
from worker.specs.reasonformer.reasonformer_pretrain import ReasonFormerPretrainSpec
from worker.tracking.context import RunContext, RunError


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


@dataclass(frozen=True)
class Corpus:
    """What a run trains and evaluates on: the model's skills, the tokenizer, the held-out examples and
    their tasks' reasoning types; the training examples (jsonl) or the suite that streams them."""

    skills: list[str]
    tokenizer: TextTokenizer
    eval_examples: list[Example]
    reasoning_of: Callable[[str], str | None]
    train_examples: list[Example] | None = None
    suite: SkillSuite | None = None


def no_reasoning(task: str) -> str | None:
    return None


def synthetic_corpus(spec: ReasonFormerPretrainSpec) -> Corpus:
    data = spec.data
    suite = suite_of(data.suite)
    skills = spec.model.resolved_skills(SYNTHETIC_SKILLS)
    tokenizer = SymbolTokenizer(suite.vocabulary())
    eval_examples = suite.pretrain_eval(eval_rng(data.suite.split_seed, 1), data.eval_per_task)
    return Corpus(
        skills, tokenizer, eval_examples[: data.eval_limit], synthetic_reasoning(suite), suite=suite
    )


def jsonl_corpus(spec: ReasonFormerPretrainSpec) -> Corpus:
    """The spec's files (checked inside the data store before anything loads); its examples' skills must
    all be the model's."""
    data = spec.data
    if data.path is None:  # the spec refuses jsonl without a path; a hand-built one is told the same
        raise RunError("data.path: the jsonl source needs the pre-training file")
    train_file = confined.data_file(data.path, "data.path")
    eval_file = confined.data_file(data.eval_path, "data.eval_path") if data.eval_path else None
    skills = spec.model.resolved_skills(PAPER_SKILLS)
    tokenizer = load_tokenizer(data.tokenizer or spec.model.backbone)
    train_examples = load_pretrain_jsonl(train_file)
    if eval_file is not None:
        eval_examples = load_pretrain_jsonl(eval_file)
    else:
        train_examples, eval_examples = split_holdout(train_examples, data.eval_fraction, spec.seed)
    unknown = sorted({s for e in train_examples for s in e.skills} - set(skills))
    if unknown:
        raise RunError(
            f"data.path: the data has skills {unknown} that the model lacks (model.skills: {skills})"
        )
    return Corpus(skills, tokenizer, eval_examples[: data.eval_limit], no_reasoning, train_examples)


def build(spec: ReasonFormerPretrainSpec, corpus: Corpus) -> tuple[nn.Module, ReasoningConfig | None]:
    rc = reasoning_config(spec.model, corpus.skills)
    model = build_model(
        spec.model.variant,
        spec.model.backbone,
        rc,
        vocab_size=corpus.tokenizer.vocab_size,
        dropout=spec.model.dropout,
    )
    return model, rc


def training_batches(
    spec: ReasonFormerPretrainSpec, corpus: Corpus, rc: ReasoningConfig | None
) -> StreamBatches | EpochBatches:
    """The suite's endless stream (never an evaluation input), or the file's examples epoch by epoch."""
    data, t = spec.data, spec.train
    depth = rc.depth if rc is not None else 1
    make = batch_maker(corpus.tokenizer, corpus.skills, depth, data.max_source_length, data.max_target_length)
    if corpus.suite is not None:
        reserved = {e.input for e in corpus.eval_examples}
        return StreamBatches(
            ExampleStream(corpus.suite.pretrain_example, spec.seed, reserved), t.batch_size, make
        )
    assert corpus.train_examples is not None  # a jsonl corpus has them
    return EpochBatches(corpus.train_examples, t.batch_size, spec.seed, make)


def log_params(ctx: RunContext, spec: ReasonFormerPretrainSpec, corpus: Corpus, model: nn.Module) -> None:
    counts = parameter_counts(model)
    suite = corpus.suite
    ctx.log_params(
        {
            **spec.model_dump(mode="json"),
            "derived": {
                "skills": corpus.skills,
                "parameters": counts.total,
                "activated_parameters": counts.activated,
                "eval_examples": len(corpus.eval_examples),
                "heldout_programs": [program_name(p) for p in suite.heldout_programs] if suite else [],
            },
        }
    )


def evaluation(spec: ReasonFormerPretrainSpec, corpus: Corpus) -> Evaluation:
    return Evaluation(
        corpus.eval_examples,
        corpus.tokenizer,
        batch_size=spec.train.eval_batch_size,
        max_source=spec.data.max_source_length,
        max_new_tokens=spec.train.max_new_tokens,
        cases_per_task=spec.analysis.cases_per_task,
        seed=spec.seed,
        reasoning_of=corpus.reasoning_of,
        suite=SuiteAnalysis(corpus.suite) if corpus.suite is not None else None,
    )


def run(spec: ReasonFormerPretrainSpec, ctx: RunContext) -> None:
    set_threads(spec.train, ctx.device)
    torch.manual_seed(spec.seed)
    confined.model_name(spec.model.backbone, "model.backbone", T5_PRESETS)
    if spec.data.tokenizer is not None:
        confined.model_name(spec.data.tokenizer, "data.tokenizer")
    corpus = synthetic_corpus(spec) if spec.data.source == "synthetic" else jsonl_corpus(spec)
    model, rc = build(spec, corpus)
    batches = training_batches(spec, corpus, rc)
    log_params(ctx, spec, corpus, model)
    modularity = rc.routing_loss_weight > 0 if rc is not None else False
    path = fit_evaluate_save(
        ctx,
        model,
        Training(batches, train_config(spec.train), routing_loss=True),
        evaluation(spec, corpus),
        Provenance(stage="pretrain", pretrained=True, modularity=modularity),
    )
    if path is not None:
        ctx.log(f"saved the model to {path}")
