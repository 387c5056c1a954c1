"""Kind ``reasonformer_finetune``: downstream adaptation of ReasonFormer or a baseline (paper 001, sections
3.3 and 5): from a ``reasonformer_pretrain`` run's saved model (``init.run_id``), a saved folder
(``init.path``) or fresh from the backbone; few-shot subsampling and frozen modules optional; teacher
forcing only. Evaluated by option log-likelihood (choice) and exact match (generative).

Metrics: as ``reasonformer_pretrain`` without ``routing_loss``; at evaluation ``eval/{task}``,
``eval/average`` and, on the synthetic suite, ``routing/order_match_heldout``. Results: ``reasonformer_eval``
(stage finetune) and, for ReasonFormer and MoRM, ``routing`` (by program on the synthetic suite).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch
from torch import nn

from worker.core.reasonformer.build import MODEL_DIR, build_model, load_model, model_reasoning
from worker.core.reasonformer.config import T5_PRESETS
from worker.core.reasonformer.data.batching import EpochBatches
from worker.core.reasonformer.data.example import Example
from worker.core.reasonformer.data.fewshot import subsample
from worker.core.reasonformer.data.hub import HUB_TASKS, load_task
from worker.core.reasonformer.data.jsonl import load_downstream_jsonl
from worker.core.reasonformer.data.synthetic import ExampleStream, SkillSuite, program_name
from worker.core.reasonformer.data.tokenizer import SymbolTokenizer, TextTokenizer, load_tokenizer
from worker.core.reasonformer.evaluate import eval_rng
from worker.core.reasonformer.freeze import freeze
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
from worker.specs.reasonformer.reasonformer_finetune import ReasonFormerFinetuneSpec
from worker.tracking.context import RunContext

SYNTHETIC_REASONING = {"compose2": "2 skills", "compose3": "3 skills", "choose2": "2 skills, choice"}


def source_folder(spec: ReasonFormerFinetuneSpec, ctx: RunContext) -> Path | None:
    """Where the initial model lies: a source run's outputs, a folder, or None (fresh)."""
    if spec.init.run_id is not None:
        outputs = ctx.run_outputs(spec.init.run_id)
        if outputs is None:
            raise RuntimeError(
                f"this run context cannot see run {spec.init.run_id}'s outputs; give init.path instead"
            )
        return outputs / MODEL_DIR
    return confined.model_folder(spec.init.path, "init.path") if spec.init.path is not None else None


def synthetic_data(spec: ReasonFormerFinetuneSpec, suite: SkillSuite) -> tuple[list[Example], list[Example]]:
    """(train, eval) of the suite's downstream tasks; evaluation inputs never occur in training."""
    d = spec.data
    tasks = d.tasks or list(suite.available_tasks())
    rng = eval_rng(d.suite.split_seed, 2)
    eval_examples = [suite.downstream(task, rng) for task in tasks for _ in range(d.eval_per_task)]
    reserved = {e.input for e in eval_examples}
    train: list[Example] = []
    for i, task in enumerate(tasks):
        stream = ExampleStream(partial(suite.downstream, task), spec.seed * 1000 + i, reserved)
        train += stream.take(d.train_per_task)
    return train, eval_examples


def text_data(spec: ReasonFormerFinetuneSpec) -> tuple[list[Example], list[Example]]:
    d = spec.data
    if d.source == "jsonl":
        assert d.train_path is not None and d.eval_path is not None
        train_file = confined.data_file(d.train_path, "data.train_path")
        eval_file = confined.data_file(d.eval_path, "data.eval_path")
        return load_downstream_jsonl(train_file), load_downstream_jsonl(eval_file)
    tasks = d.tasks or list(HUB_TASKS)
    train = [e for task in tasks for e in load_task(task, "train", limit=d.hub_limit)]
    evals = [e for task in tasks for e in load_task(task, "eval", limit=d.hub_limit)]
    return train, evals


def run(spec: ReasonFormerFinetuneSpec, ctx: RunContext) -> None:
    d, t = spec.data, spec.train
    set_threads(t, ctx.device)
    torch.manual_seed(spec.seed)
    suite = suite_of(d.suite) if d.source == "synthetic" else None
    folder = source_folder(spec, ctx)
    if folder is None:
        confined.model_name(spec.model.backbone, "model.backbone", T5_PRESETS)
    if d.tokenizer is not None:
        confined.model_name(d.tokenizer, "data.tokenizer")
    if d.source == "jsonl" and d.train_path and d.eval_path:  # checked before anything loads
        confined.data_file(d.train_path, "data.train_path")
        confined.data_file(d.eval_path, "data.eval_path")
    tokenizer: TextTokenizer
    model: nn.Module
    if folder is not None:
        model, tokenizer = load_model(folder), load_tokenizer(folder)
        ctx.log(f"initialised from {folder}")
    else:
        skills = spec.model.resolved_skills(SYNTHETIC_SKILLS if suite is not None else PAPER_SKILLS)
        tokenizer = (
            SymbolTokenizer(suite.vocabulary())
            if suite is not None
            else load_tokenizer(d.tokenizer or spec.model.backbone)
        )
        model = build_model(
            spec.model.variant,
            spec.model.backbone,
            reasoning_config(spec.model, skills),
            vocab_size=tokenizer.vocab_size,
            dropout=spec.model.dropout,
        )
    freeze(model, spec.freeze)

    train_examples, eval_examples = synthetic_data(spec, suite) if suite is not None else text_data(spec)
    few_shot = None
    if d.few_shot is not None:
        train_examples = subsample(
            train_examples, count=d.few_shot.count, fraction=d.few_shot.fraction, seed=d.few_shot.seed
        )
        amount = (
            f"{d.few_shot.count} per task" if d.few_shot.count else f"{d.few_shot.fraction:g} of each task"
        )
        few_shot = f"{amount} (seed {d.few_shot.seed})"
    make = batch_maker(tokenizer, (), 1, d.max_source_length, d.max_target_length)
    batches = EpochBatches(train_examples, t.batch_size, spec.seed, make)

    pretrained = folder is not None
    rc = model_reasoning(model)
    # modularity (Table 2): the skill-routing loss shaped the modules in pre-training
    modularity = pretrained and rc is not None and rc.routing_loss_weight > 0
    counts = parameter_counts(model)
    ctx.log_params(
        {
            **spec.model_dump(mode="json"),
            "derived": {
                "source": str(folder) if folder else None,
                "parameters": counts.total,
                "activated_parameters": counts.activated,
                "tuned_parameters": counts.tuned,
                "train_examples": len(train_examples),
                "eval_examples": len(eval_examples),
            },
        }
    )

    def regroup(e: Example) -> str:  # the synthetic suite's routing by program: its order is known
        return program_name(e.skills) if suite is not None and e.skills else e.task

    def reasoning_of(task: str) -> str | None:
        if suite is not None:
            return SYNTHETIC_REASONING.get(task)
        hub = HUB_TASKS.get(task)
        return hub.reasoning if hub is not None and d.source == "hub" else None

    routing_regroup: Callable[[Example], str] | None = regroup if suite is not None else None

    fit_evaluate_save(
        ctx,
        model,
        tokenizer,
        batches,
        t,
        eval_examples=eval_examples,
        max_source=d.max_source_length,
        stage="finetune",
        pretrained=pretrained,
        routing_loss=False,
        cases_per_task=spec.analysis.cases_per_task,
        seed=spec.seed,
        suite=suite,
        regroup=routing_regroup,
        modularity=modularity,
        freeze=spec.freeze,
        reasoning_of=reasoning_of,
        few_shot=few_shot,
        source_run_id=spec.init.run_id,
    )
