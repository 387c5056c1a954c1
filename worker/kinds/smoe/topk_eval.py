"""Kind ``topk_eval``: a model trained at k evaluated at every experts-per-token k' (SMoE paper 004,
section 2.1), through one knob that finds every router by class and attribute
(``worker.core.models.routers``).

Metrics: ``{score}/train_k{k}`` at step k' (one line per train k; ``ood_acc/train_k{k}`` for SRAVEN).
Once a model's row is done, at step 0: ``{score}/train_k{k}/best_eval_k`` (the k' with the best score,
ties to the smaller) and ``{score}/train_k{k}/eval_regret`` (how far k' = k falls behind that best, >= 0).
SMoEs trained in this run at two or more k, each evaluated at its own k, add at step 0
``{score}/best_train_k`` (the trained k whose model scores best at its own k) and
``{score}/train_regret/k{k}`` per trained k: per-run readings of the paper's "optimal number of activated
experts" that claims compare between arms (``worker.core.topk.best``).
Result: one ``topk_eval_point`` per (train k, k'). In the ``{}`` demo the in-run SMoE trainings log their
own curves under ``train/k{k}/...``. Per-example tables: ``items`` (a SRAVEN problem, choice item or
ReasonFormer instance a row, its score at every k') and, for a perplexity, ``windows`` (a window a row,
its NLL and perplexity at every k').
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from worker.core.models import ModelNotFound, Placement, PlacementError, input_device, load_model
from worker.core.models.routers import RouterError, experts_per_token, find_routers
from worker.core.reasonformer.build import MODEL_DIR as REASONFORMER_MODEL_DIR
from worker.core.reasonformer.build import load_model as load_reasonformer
from worker.core.reasonformer.build import model_reasoning
from worker.core.reasonformer.data.synthetic import SkillSuite, SuiteConfig
from worker.core.reasonformer.data.tokenizer import load_tokenizer
from worker.core.reasonformer.evaluate import Predictions, eval_metrics, eval_rng, predict_eval, task_scores
from worker.core.sraven.generator import SravenGenerator
from worker.core.sraven.saved import load_sraven_model
from worker.core.topk import choice_accuracy, load_choice_jsonl, perplexity, token_windows
from worker.core.topk.best import best_k, regret
from worker.core.topk.text import SAMPLE_TEXT
from worker.kinds.smoe import smoe_sraven
from worker.runtime import confined
from worker.specs.placement import accelerate_max_memory
from worker.specs.smoe.smoe_sraven import SmoeSravenSpec, SravenMoE
from worker.specs.smoe.topk_eval import HfTarget, ReasonFormerTarget, SmoeTarget, TopkEvalPoint, TopkEvalSpec
from worker.tracking.context import RunContext, RunError
from worker.tracking.training import TrainingContext


@dataclass
class SmoeSource:
    label: str
    source_run_id: int | None
    model: nn.Module
    source_spec: SmoeSravenSpec


def _checked_ks(spec: TopkEvalSpec, model: nn.Module, field: str = "eval_k") -> tuple[list[int], int]:
    """k' to evaluate (the spec's, or 1..E) and E; a model without routers or a k' above E is a RunError."""
    routers = find_routers(model)
    if not routers:
        raise RunError(f"{type(model).__name__} has no router: topk_eval needs a mixture-of-experts model")
    experts = [r.experts for r in routers if r.experts is not None]
    if not experts:
        raise RunError("cannot tell how many experts the routers choose among")
    E = min(experts)
    ks = spec.eval_k or list(range(1, E + 1))
    above = [k for k in ks if k > E]
    if above:
        raise RunError(f"{field}: k' {above} above the model's {E} experts (1..{E})")
    return ks, E


def _trained_k(model: nn.Module) -> int:
    return int(getattr(find_routers(model)[0].module, "top_k"))  # noqa: B009 - nn.Module attribute typing


def _smoe_from_folder(folder: Path, label: str, run_id: int | None, device: str) -> SmoeSource:
    try:
        model, meta = load_sraven_model(folder, device)
    except FileNotFoundError as exc:
        raise RunError(
            f"{exc}; a smoe_sraven run from before it saved its model has none: re-run the source with this version"
        ) from exc
    source_spec = SmoeSravenSpec.model_validate(meta["spec"])
    if source_spec.moe is None:
        raise RunError(f"{label} has a dense FFN: no router to set")
    return SmoeSource(label, run_id, model, source_spec)


def smoe_sources(spec: TopkEvalSpec, s: SmoeTarget, ctx: RunContext) -> Iterator[SmoeSource]:
    if s.run_id is not None:
        outputs = ctx.run_outputs(s.run_id)
        if outputs is None:
            raise RunError(f"this run context cannot see run {s.run_id}'s outputs; give target.path instead")
        yield _smoe_from_folder(outputs / smoe_sraven.MODEL_DIR, f"run {s.run_id}", s.run_id, ctx.device)
        return
    if s.path is not None:
        yield _smoe_from_folder(
            confined.model_folder(s.path, "target.smoe_sraven.path"), s.path, None, ctx.device
        )
        return
    demo = s.demo
    for index, k in enumerate(s.train_k):
        train_spec = SmoeSravenSpec(
            seed=spec.seed,
            resources=spec.resources,
            data=demo.data,
            model=demo.model,
            moe=SravenMoE(num_experts=demo.moe.num_experts, top_k=k, expert_hidden=demo.moe.expert_hidden),
            train=demo.train,
        )
        sub = TrainingContext(
            ctx,
            index=index,
            count=len(s.train_k),
            out_dir=ctx.out_dir / f"train-k{k}",
            prefix=f"train/k{k}/",
            label=f"training k={k}",
            tag=f"train k={k}",
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the generator's OOD warning at small M, once per training
            smoe_sraven.run(train_spec, sub)
        if ctx.should_stop():
            return
        yield _smoe_from_folder(sub.out_dir / smoe_sraven.MODEL_DIR, f"in-run k={k}", None, ctx.device)


Row = dict[int, float]  # k' -> a score


def log_row_readings(ctx: RunContext, score: str, train_k: int, row: Row, higher_is_better: bool) -> None:
    """A model's row, read once it is done (step 0): the k' with the best score and how far its own k
    falls behind it (only when its own k is in the row)."""
    best = best_k(row, higher_is_better)
    if best is None:
        return
    metrics = {f"{score}/train_k{train_k}/best_eval_k": float(best)}
    behind = regret(row, train_k, higher_is_better)
    if behind is not None:
        metrics[f"{score}/train_k{train_k}/eval_regret"] = behind
    ctx.log_metrics(metrics, 0)


def log_diagonal_readings(ctx: RunContext, score: str, rows: dict[int, Row]) -> None:
    """Models trained in this run at each k, each read at its own k' = k (a ``smoe_sraven`` cell each):
    the trained k whose model scores best, and how far each trained k falls behind it (step 0). Needs two
    or more models, each evaluated at its own k; nothing is logged otherwise."""
    diagonal = {k: row[k] for k, row in rows.items() if k in row}
    if len(rows) < 2 or len(diagonal) < len(rows):
        return
    best = best_k(diagonal)
    if best is None:
        return
    metrics = {f"{score}/best_train_k": float(best)}
    for k in diagonal:
        behind = regret(diagonal, k)
        if behind is not None:
            metrics[f"{score}/train_regret/k{k}"] = behind
    ctx.log_metrics(metrics, 0)


def run_smoe(spec: TopkEvalSpec, s: SmoeTarget, ctx: RunContext) -> None:
    device = torch.device(ctx.device)
    trains = len(s.train_k) if s.trains_in_run else 0
    rows: dict[str, dict[int, Row]] = {"test_acc": {}, "ood_acc": {}}  # score -> train k -> its row
    for source in smoe_sources(spec, s, ctx):
        model, src = source.model, source.source_spec
        ks, E = _checked_ks(spec, model)
        train_k = _trained_k(model)
        M = src.data.num_features
        generator = SravenGenerator(
            M,
            ood_fraction=src.data.ood_fraction,
            permute_features=src.data.permute_features,
            split_seed=src.data.split_seed,
            holdout_buckets=src.data.holdout_buckets,
        )
        size = s.eval_size or src.train.eval_size
        sets = [smoe_sraven.EvalSet.of("test", generator.eval_set("test", size, src.data.test_seed))]
        if len(generator.ood_idx):
            sets.append(smoe_sraven.EvalSet.of("ood", generator.eval_set("ood", size, src.data.ood_seed)))
        right: dict[int, dict[str, list[bool]]] = {}  # per k': per set, each problem all-M right
        for i, k in enumerate(ks):
            if ctx.should_stop():
                return
            with experts_per_token(model, k) as report, torch.no_grad():
                scores = smoe_sraven.evaluate_sets(
                    model, sets, s.eval_batch_size, device, right.setdefault(k, {})
                )
            ctx.log_metrics(
                {
                    f"test_acc/train_k{train_k}": scores["test_acc"],
                    **({f"ood_acc/train_k{train_k}": scores["ood_acc"]} if "ood_acc" in scores else {}),
                },
                k,
            )
            for name, row in rows.items():
                if name in scores:
                    row.setdefault(train_k, {})[k] = scores[name]
            ctx.log_result(
                TopkEvalPoint(
                    target="smoe_sraven",
                    model=source.label,
                    family="smoe",
                    source_run_id=source.source_run_id,
                    train_k=train_k,
                    eval_k=k,
                    num_experts=E,
                    routers=report.routers,
                    renormalises=report.renormalises,
                    score="test_acc",
                    value=scores["test_acc"],
                    higher_is_better=True,
                    ood_value=scores.get("ood_acc"),
                    per_feature=[scores[f"test_acc/f{j}"] for j in range(M)],
                    M=M,
                    n=len(sets[0].targets),
                    ood_n=len(sets[1].targets) if len(sets) > 1 else None,
                    extra={key: v for key, v in scores.items() if key.endswith("_loss")},
                )
            )
            if trains:
                share = trains + 1
                done = (trains + (i + 1) / len(ks)) / share
                ctx.progress(int(done * 1000), 1000, f"{source.label}: k'={k}")
            else:
                ctx.progress(i + 1, len(ks), f"{source.label}: k'={k} test_acc {scores['test_acc']:.3f}")
        ctx.log_examples(
            "items",
            [
                {
                    "key": f"train_k{train_k}/{eval_set.name}/{n}",
                    "model": source.label,
                    "train_k": train_k,
                    "set": eval_set.name,
                    "item": n,
                    "answer": eval_set.targets[n].tolist(),
                    "score": {str(k): float(right[k][eval_set.name][n]) for k in ks},
                }
                for eval_set in sets
                for n in range(len(eval_set.targets))
            ],
        )
        for name, by_train_k in rows.items():
            if train_k in by_train_k:
                log_row_readings(ctx, name, train_k, by_train_k[train_k], higher_is_better=True)
    if trains and not ctx.should_stop():
        for name, by_train_k in rows.items():
            log_diagonal_readings(ctx, name, by_train_k)


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


PREVIEW_CHARS = 160  # a perplexity window's text in its example row


def window_rows(
    windows: list[list[int]],
    window: int,
    tokenizer: Any,
    ks: list[int],
    window_nll: dict[int, tuple[float, ...]],
) -> list[dict[str, Any]]:
    """The perplexity windows' table: a window a row, with where it starts in the text (tokens), the start
    of its decoded text, the tokens it scores (all but its first) and its mean NLL and perplexity at every
    k' (which windows get worse as k' drops). Windows are consecutive, ``window`` tokens each."""
    rows = []
    for n, ids in enumerate(windows):
        text = tokenizer.decode(ids, skip_special_tokens=True)
        nll = {str(k): window_nll[k][n] for k in ks}
        rows.append(
            {
                "key": f"window-{n}",
                "window": n,
                "offset": n * window,
                "text": text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…",
                "tokens": len(ids) - 1,
                "nll": nll,
                "perplexity": {k: math.exp(v) for k, v in nll.items()},
            }
        )
    return rows


def run_hf(spec: TopkEvalSpec, h: HfTarget, ctx: RunContext) -> None:
    # the files the spec names, checked (inside the data store) before the model loads
    text_file = confined.data_file(h.text_path, "target.hf.text_path") if h.text_path is not None else None
    choices_file = None
    if h.score == "multiple_choice":
        if h.choices_path is None:  # the spec refuses this; a hand-built one is told the same
            raise RunError("target.hf.choices_path: score multiple_choice needs a JSONL file of choices")
        choices_file = confined.data_file(h.choices_path, "target.hf.choices_path")
    where = (
        Placement(h.device_map, accelerate_max_memory(h.max_memory), gpus=spec.resources.gpus)
        if h.device_map
        else None
    )
    try:
        loaded = load_model(h.model, seed=spec.seed, dtype=DTYPES[h.dtype], placement=where)
    except ModelNotFound as exc:
        raise RunError(f"target.hf.model: {exc}") from None
    except PlacementError as exc:
        raise RunError(f"target.hf.device_map: {exc}") from None
    model: nn.Module = loaded.model
    if where is None:
        model = model.to(torch.device(ctx.device))
    model = model.eval()
    device = str(input_device(model))  # the run's device, or the first of a device_map's
    ks, E = _checked_ks(spec, model)
    train_k = _trained_k(model)
    tokenizer = loaded.tokenizer
    derived: dict[str, Any] = {"model_type": loaded.model_type, "experts": E, "trained_k": train_k}
    if loaded.device_map is not None:
        derived["device_map"] = {str(module): str(d) for module, d in loaded.device_map.items()}
    ctx.log_params({"derived": derived})
    windows: list[list[int]] = []
    items = []
    if h.score == "perplexity":
        text = text_file.read_text() if text_file is not None else SAMPLE_TEXT
        windows = token_windows(tokenizer(text)["input_ids"], h.window, h.max_tokens)
        if not windows:
            raise RunError("target.hf.text_path: the text has fewer than 2 tokens")
    else:
        assert choices_file is not None  # set above for multiple_choice
        try:
            items = load_choice_jsonl(choices_file, h.limit)
        except (OSError, ValueError) as exc:
            raise RunError(f"target.hf.choices_path: {exc}") from exc
    chosen: dict[int, list[int]] = {}  # per k', each choice item's chosen option
    window_nll: dict[int, tuple[float, ...]] = {}  # per k', each perplexity window's mean NLL
    row: Row = {}  # k' -> the score
    for i, k in enumerate(ks):
        if ctx.should_stop():
            return
        with experts_per_token(model, k) as report:
            extra: dict[str, float] = {}
            if h.score == "perplexity":
                p = perplexity(model, windows, h.batch_size, device)
                window_nll[k] = p.window_nll
                score, value, higher = "perplexity", p.perplexity, False
                extra = {"nll": p.nll, "tokens": float(p.tokens)}
            else:
                score, value, higher = (
                    "choice_accuracy",
                    choice_accuracy(model, tokenizer, items, device, chosen.setdefault(k, [])),
                    True,
                )
                extra = {"items": float(len(items))}
        ctx.log_metrics({f"{score}/train_k{train_k}": value}, k)
        row[k] = value
        ctx.log_result(
            TopkEvalPoint(
                target="hf",
                model=h.model,
                family=loaded.model_type,
                train_k=train_k,
                eval_k=k,
                num_experts=E,
                routers=report.routers,
                renormalises=report.renormalises,
                score=score,
                value=value,
                higher_is_better=higher,
                n=len(items) if score == "choice_accuracy" else None,
                extra=extra,
            )
        )
        ctx.progress(i + 1, len(ks), f"k'={k} {score} {value:.4g}")
    if h.score == "perplexity":
        log_row_readings(ctx, "perplexity", train_k, row, higher_is_better=False)
    else:
        log_row_readings(ctx, "choice_accuracy", train_k, row, higher_is_better=True)
    if windows:
        ctx.log_examples("windows", window_rows(windows, h.window, tokenizer, ks, window_nll))
    if items:  # a choice item a row
        ctx.log_examples(
            "items",
            [
                {
                    "key": f"item-{n}",
                    "item": n,
                    "prompt": item.prompt,
                    "choices": item.choices,
                    "answer": item.answer,
                    "chosen": {str(k): chosen[k][n] for k in ks},
                    "score": {str(k): float(chosen[k][n] == item.answer) for k in ks},
                }
                for n, item in enumerate(items)
            ],
        )


def run_reasonformer(spec: TopkEvalSpec, r: ReasonFormerTarget, ctx: RunContext) -> None:
    run_id = r.pretrain_run_id or r.finetune_run_id
    if run_id is not None:
        outputs = ctx.run_outputs(run_id)
        if outputs is None:
            raise RunError(f"this run context cannot see run {run_id}'s outputs; give target.path")
        folder, label = outputs / REASONFORMER_MODEL_DIR, f"run {run_id}"
    else:
        if r.path is None:  # the spec refuses this; a hand-built one is told the same
            raise RunError(
                "target.reasonformer.path: name the model by pretrain_run_id, finetune_run_id or path"
            )
        folder, label = confined.model_folder(r.path, "target.reasonformer.path"), r.path
    model, tokenizer = load_reasonformer(folder).to(ctx.device).eval(), load_tokenizer(folder)
    rc = model_reasoning(model)
    if rc is None:
        raise RunError(f"{label} is a plain T5: it has no skill router")
    ks, E = _checked_ks(spec, model)
    train_k = rc.k
    suite = SkillSuite(SuiteConfig(**r.suite.model_dump()))
    which = r.examples if r.examples != "auto" else ("pretrain" if r.pretrain_run_id else "downstream")
    if which == "pretrain":
        examples = suite.pretrain_eval(eval_rng(r.suite.split_seed, 1), r.eval_per_task)
    else:
        rng = eval_rng(r.suite.split_seed, 2)
        tasks = r.tasks or list(suite.available_tasks())
        examples = [suite.downstream(task, rng) for task in tasks for _ in range(r.eval_per_task)]
    preds: dict[int, Predictions] = {}
    row: Row = {}  # k' -> the suite's average accuracy
    for i, k in enumerate(ks):
        if ctx.should_stop():
            return
        with experts_per_token(model, k) as report:
            pred = preds[k] = predict_eval(
                model,
                examples,
                tokenizer,
                batch_size=r.eval_batch_size,
                max_source=r.max_source_length,
                device=ctx.device,
            )
        metrics = eval_metrics(pred)
        value = metrics.pop("eval/average")
        # the mean of equal-sized tasks' proportions is the proportion of all examples: n of them
        counts = {s.count for s in task_scores(pred)}
        ctx.log_metrics({f"eval_average/train_k{train_k}": value}, k)
        row[k] = value
        ctx.log_result(
            TopkEvalPoint(
                target="reasonformer",
                model=label,
                family="reasonformer",
                source_run_id=run_id,
                train_k=train_k,
                eval_k=k,
                num_experts=E,
                routers=report.routers,
                renormalises=report.renormalises,
                score="eval_average",
                value=value,
                higher_is_better=True,
                n=len(examples) if len(counts) == 1 else None,
                extra={key.removeprefix("eval/"): v for key, v in metrics.items()},
            )
        )
        ctx.progress(i + 1, len(ks), f"k'={k} average {value:.3f}")
    log_row_readings(ctx, "eval_average", train_k, row, higher_is_better=True)
    ctx.log_examples(
        "items",
        [
            {
                "key": f"{e.task}/{n}",
                "task": e.task,
                "input": e.input,
                "gold": e.output,
                "prediction": {str(k): preds[k].predictions[n] for k in ks},
                "score": {str(k): float(preds[k].correct[n]) for k in ks},
            }
            for n, e in enumerate(examples)
        ],
    )


def run(spec: TopkEvalSpec, ctx: RunContext) -> None:
    if ctx.device == "cpu":
        torch.set_num_threads(spec.threads)
    torch.manual_seed(spec.seed)
    ctx.log_params(spec.model_dump(mode="json"))
    try:
        target = spec.target
        if isinstance(target, SmoeTarget):
            run_smoe(spec, target, ctx)
        elif isinstance(target, HfTarget):
            run_hf(spec, target, ctx)
        else:
            run_reasonformer(spec, target, ctx)
    except RouterError as exc:
        raise RunError(str(exc)) from exc
