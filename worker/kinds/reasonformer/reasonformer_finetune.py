"""Kind ``reasonformer_finetune``: downstream adaptation of ReasonFormer or a baseline (paper 001, sections
3.3 and 5): from a ``reasonformer_pretrain`` run's saved model (``init.run_id``), a saved folder
(``init.path``), a model pre-trained in this run first (``init.pretrain``: the pre-training kind's corpus,
trainer and evaluation, on the synthetic suite or jsonl text) or fresh from the backbone; few-shot subsampling and frozen
modules optional; teacher forcing only. Evaluated by option log-likelihood (choice) and exact match
(generative).

Metrics: as ``reasonformer_pretrain`` without ``routing_loss``; at evaluation ``eval/{task}``,
``eval/average`` and, on the synthetic suite, ``routing/order_match_heldout``. With ``init.pretrain``, the
pre-training phase's metrics under ``pretrain/`` (``pretrain/loss``, ``pretrain/routing_loss``, at its end
``pretrain/eval/average``, ``pretrain/routing/skill_match``, ``pretrain/routing/order_match_trained``,
``pretrain/routing/order_match_heldout``). Results: ``reasonformer_eval`` (stage finetune) and, for
ReasonFormer and MoRM, ``routing`` (by program on the synthetic suite).
"""

from __future__ import annotations

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
from worker.kinds.reasonformer.common.data import batch_maker, suite_of
from worker.kinds.reasonformer.common.evaluation import Evaluation, evaluate
from worker.kinds.reasonformer.common.model import reasoning_config
from worker.kinds.reasonformer.common.pipeline import fit_evaluate_save
from worker.kinds.reasonformer.common.provenance import Provenance
from worker.kinds.reasonformer.common.routing_record import SuiteAnalysis
from worker.kinds.reasonformer.common.training import Phase, Training, fit, set_threads, train_config
from worker.kinds.reasonformer.reasonformer_pretrain import build as build_pretrain
from worker.kinds.reasonformer.reasonformer_pretrain import evaluation as pretrain_evaluation
from worker.kinds.reasonformer.reasonformer_pretrain import jsonl_corpus, synthetic_corpus, training_batches
from worker.runtime import confined
from worker.specs.reasonformer.common.analysis import AnalysisSpec
from worker.specs.reasonformer.common.skills import PAPER_SKILLS, SYNTHETIC_SKILLS
from worker.specs.reasonformer.reasonformer_finetune import ReasonFormerFinetuneSpec
from worker.specs.reasonformer.reasonformer_pretrain import ReasonFormerPretrainSpec
from worker.tracking.context import RunContext, RunError

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
        if d.train_path is None or d.eval_path is None:  # the spec refuses this; a hand-built one hears why
            missing = "train_path" if d.train_path is None else "eval_path"
            raise RunError(f"data.{missing}: the jsonl source needs a training and an evaluation file")
        train_file = confined.data_file(d.train_path, "data.train_path")
        eval_file = confined.data_file(d.eval_path, "data.eval_path")
        return load_downstream_jsonl(train_file), load_downstream_jsonl(eval_file)
    tasks = d.tasks or list(HUB_TASKS)
    train = [e for task in tasks for e in load_task(task, "train", limit=d.hub_limit)]
    evals = [e for task in tasks for e in load_task(task, "eval", limit=d.hub_limit)]
    return train, evals


def check_names(spec: ReasonFormerFinetuneSpec, folder: Path | None) -> None:
    """The models and files the spec names, checked before anything loads."""
    d, pre = spec.data, spec.init.pretrain
    if pre is not None:
        confined.model_name(pre.model.backbone, "init.pretrain.model.backbone", T5_PRESETS)
        if pre.data.tokenizer is not None:
            confined.model_name(pre.data.tokenizer, "init.pretrain.data.tokenizer")
        for name in ("path", "eval_path"):
            if pre.data.source == "jsonl" and getattr(pre.data, name):
                confined.data_file(getattr(pre.data, name), f"init.pretrain.data.{name}")
    elif folder is None:
        confined.model_name(spec.model.backbone, "model.backbone", T5_PRESETS)
    if d.tokenizer is not None:
        confined.model_name(d.tokenizer, "data.tokenizer")
    if d.source == "jsonl" and d.train_path and d.eval_path:
        confined.data_file(d.train_path, "data.train_path")
        confined.data_file(d.eval_path, "data.eval_path")


def initial_model(
    spec: ReasonFormerFinetuneSpec, ctx: RunContext, folder: Path | None, suite: SkillSuite | None
) -> tuple[nn.Module, TextTokenizer]:
    """The saved model and tokenizer in ``folder``, or a fresh model of the spec with the data's tokenizer."""
    if folder is not None:
        model, tokenizer = load_model(folder), load_tokenizer(folder)
        ctx.log(f"initialised from {folder}")
        return model, tokenizer
    skills = spec.model.resolved_skills(SYNTHETIC_SKILLS if suite is not None else PAPER_SKILLS)
    fresh: TextTokenizer = (
        SymbolTokenizer(suite.vocabulary())
        if suite is not None
        else load_tokenizer(spec.data.tokenizer or spec.model.backbone)
    )
    model = build_model(
        spec.model.variant,
        spec.model.backbone,
        reasoning_config(spec.model, skills),
        vocab_size=fresh.vocab_size,
        dropout=spec.model.dropout,
    )
    return model, fresh


PRETRAIN_PREFIX = "pretrain/"  # the in-run pre-training's metric keys (init.pretrain)


def in_run_pretrain_spec(spec: ReasonFormerFinetuneSpec) -> ReasonFormerPretrainSpec:
    """``init.pretrain`` as the ``reasonformer_pretrain`` spec it runs: the run's seed and device, no case
    studies (the run's records are the fine-tuned model's)."""
    pre = spec.init.pretrain
    assert pre is not None  # the caller checked
    return ReasonFormerPretrainSpec(
        seed=spec.seed,
        resources=spec.resources,
        data=pre.data,
        model=pre.model,
        train=pre.train,
        analysis=AnalysisSpec(cases_per_task=0),
    )


def pretrain_first(spec: ReasonFormerFinetuneSpec, ctx: RunContext) -> tuple[nn.Module, TextTokenizer] | None:
    """Reasoning-centric pre-training in this run (``init.pretrain``; paper 001, section 3.3): the
    pre-training kind's corpus (the synthetic suite or jsonl), model and trainer (LM + skill-routing loss),
    its metrics and final evaluation under ``pretrain/``, its checkpoints under the key ``pretrain`` at
    steps 1..P. Returns the pre-trained model and its tokenizer, or None when the run was stopped. A run
    resumed after fine-tuning began (the newest checkpoint is fine-tuning's) skips it: the fine-tuning
    trainer restores the weights."""
    pspec = in_run_pretrain_spec(spec)
    corpus = synthetic_corpus(pspec) if pspec.data.source == "synthetic" else jsonl_corpus(pspec)
    model, rc = build_pretrain(pspec, corpus)
    resumed = ctx.load_checkpoint()
    if resumed is not None and "trainer" in resumed[0]:
        return model, corpus.tokenizer
    steps = pspec.train.steps
    phase = Phase(prefix=PRETRAIN_PREFIX, key="pretrain", total=steps + spec.train.steps)
    evaluation = pretrain_evaluation(pspec, corpus)
    modularity = rc is not None and rc.routing_loss_weight > 0
    provenance = Provenance(stage="pretrain", pretrained=True, modularity=modularity)

    def during(m: nn.Module, step: int) -> dict[str, float]:
        return evaluate(m, evaluation, provenance, ctx.device, cases_per_task=0)[1]

    training = Training(training_batches(pspec, corpus, rc), train_config(pspec.train), routing_loss=True)
    trainer, outcome = fit(ctx, model, training, evaluate=during, phase=phase)
    if outcome.stopped:
        ctx.log(f"stopped at pre-training step {outcome.step}; checkpoint saved")
        return None
    # evaluated at its last step already when it evaluates during training (eval_interval > 0)
    metrics = outcome.last_eval or trainer.evaluate(during)
    ctx.log_metrics(phase.keys(metrics), outcome.step)
    ctx.log(f"pre-trained {steps} steps in this run (init.pretrain); fine-tuning it")
    return model, corpus.tokenizer


def few_shot_sample(spec: ReasonFormerFinetuneSpec, train: list[Example]) -> tuple[list[Example], str | None]:
    """The few-shot subsample of the training examples (section 5.3) and how it was drawn, or all of them."""
    few = spec.data.few_shot
    if few is None:
        return train, None
    sample = subsample(train, count=few.count, fraction=few.fraction, seed=few.seed)
    amount = f"{few.count} per task" if few.count else f"{few.fraction:g} of each task"
    return sample, f"{amount} (seed {few.seed})"


def log_params(
    ctx: RunContext,
    spec: ReasonFormerFinetuneSpec,
    model: nn.Module,
    folder: Path | None,
    train: list[Example],
    evals: list[Example],
) -> None:
    counts = parameter_counts(model)
    ctx.log_params(
        {
            **spec.model_dump(mode="json"),
            "derived": {
                "source": str(folder) if folder else ("init.pretrain" if spec.init.pretrain else None),
                "parameters": counts.total,
                "activated_parameters": counts.activated,
                "tuned_parameters": counts.tuned,
                "train_examples": len(train),
                "eval_examples": len(evals),
            },
        }
    )


def evaluation(
    spec: ReasonFormerFinetuneSpec,
    examples: list[Example],
    tokenizer: TextTokenizer,
    suite: SkillSuite | None,
) -> Evaluation:
    """The evaluation of the fine-tuned model; on the synthetic suite its routing is analysed by program
    (whose order is known)."""
    d = spec.data

    def by_program(e: Example) -> str:
        return program_name(e.skills) if e.skills else e.task

    def reasoning_of(task: str) -> str | None:
        if suite is not None:
            return SYNTHETIC_REASONING.get(task)
        hub = HUB_TASKS.get(task)
        return hub.reasoning if hub is not None and d.source == "hub" else None

    return Evaluation(
        examples,
        tokenizer,
        batch_size=spec.train.eval_batch_size,
        max_source=d.max_source_length,
        max_new_tokens=spec.train.max_new_tokens,
        cases_per_task=spec.analysis.cases_per_task,
        seed=spec.seed,
        reasoning_of=reasoning_of,
        suite=SuiteAnalysis(suite, regroup=by_program) if suite is not None else None,
    )


def provenance(
    spec: ReasonFormerFinetuneSpec, model: nn.Module, pretrained: bool, few_shot: str | None
) -> Provenance:
    rc = model_reasoning(model)
    return Provenance(
        stage="finetune",
        pretrained=pretrained,
        # modularity (Table 2): the skill-routing loss shaped the modules in pre-training
        modularity=pretrained and rc is not None and rc.routing_loss_weight > 0,
        freeze=spec.freeze,
        few_shot=few_shot,
        source_run_id=spec.init.run_id,
    )


def run(spec: ReasonFormerFinetuneSpec, ctx: RunContext) -> None:
    d, t = spec.data, spec.train
    pretrain_steps = spec.init.pretrain.train.steps if spec.init.pretrain is not None else 0
    set_threads(t, ctx.device)
    torch.manual_seed(spec.seed)
    suite = suite_of(d.suite) if d.source == "synthetic" else None
    folder = source_folder(spec, ctx)
    check_names(spec, folder)
    if spec.init.pretrain is not None:
        pretrained = pretrain_first(spec, ctx)
        if pretrained is None:
            return
        model, tokenizer = pretrained
    else:
        model, tokenizer = initial_model(spec, ctx, folder, suite)
    freeze(model, spec.freeze)
    train_examples, eval_examples = synthetic_data(spec, suite) if suite is not None else text_data(spec)
    train_examples, few_shot = few_shot_sample(spec, train_examples)
    make = batch_maker(tokenizer, (), 1, d.max_source_length, d.max_target_length)
    batches = EpochBatches(train_examples, t.batch_size, spec.seed, make)
    log_params(ctx, spec, model, folder, train_examples, eval_examples)
    fit_evaluate_save(
        ctx,
        model,
        Training(batches, train_config(t), routing_loss=False),
        evaluation(spec, eval_examples, tokenizer, suite),
        provenance(spec, model, folder is not None or spec.init.pretrain is not None, few_shot),
        Phase(offset=pretrain_steps, total=pretrain_steps + t.steps),
    )
