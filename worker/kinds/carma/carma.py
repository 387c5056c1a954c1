"""Kind ``carma``: fine-tune a HuggingFace causal LM with or without CARMA (paper 003, section 3), keep the
best checkpoint by validation accuracy, then measure it: test accuracy (Figures 3-4), CAP curves per
protocol (Figure 2) and synonym consistency per rate (Tables 1, 4, 5). docs/experiments/carma.md.

Metrics: ``loss`` (eq. 8's total), ``task_loss``, ``mi_loss``, ``stability_loss``, ``carma_loss`` (eq. 7),
``mi_pairs``, ``train_acc`` (the batch), ``lr``, ``grad_norm``, ``step_time`` (seconds per step),
``validation_acc``, ``validation_loss``. For ``ft`` the MI and stability losses are computed without
gradient so the variants' curves compare. Results: ``carma_eval``, ``cap_curve`` (one per protocol),
``synonym_consistency`` (one per rate).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from worker.core.cap import cap_curve
from worker.core.carma.batches import Batch, EpochStream, batches
from worker.core.carma.datasets import check_sentiment_labels, load_csv, load_hf, load_jsonl, wordnet_idm
from worker.core.carma.evaluate import evaluate
from worker.core.carma.objective import CarmaConfig, CarmaObjective, default_layer_range
from worker.core.carma.tasks import Encoded, Example, Splits, encode, prompt_template, split
from worker.core.models import LoadedModel, ModelNotFound, load_model
from worker.core.synonyms import make_source, stopwords
from worker.core.synonyms.evaluate import SynonymOutcome, synonym_intervention
from worker.core.train import StepOutput, TrainConfig, Trainer
from worker.runtime import confined
from worker.specs.carma.carma import CapCurve, CapPoint, CarmaEval, CarmaSpec, SynonymConsistency
from worker.tracking.context import RunContext, RunError


def load_examples(spec: CarmaSpec) -> list[list[Example]]:
    """All examples as one list (to be split 80/10/10), or the dataset's own three splits (``hf``)."""
    d = spec.data
    if d.source == "wordnet":
        return [wordnet_idm(d.wordnet_pos)]
    if d.source == "hf":
        return load_hf(
            confined.hub_dataset(d.hf_name, "data.hf_name"),
            d.hf_config,
            d.hf_splits,
            d.text_field,
            d.label_field,
            d.positive_above,
            d.negative_below,
        )
    assert d.path is not None
    loader = load_jsonl if d.source == "jsonl" else load_csv
    path = confined.data_file(d.path, "data.path")
    return [loader(path, d.text_field, d.label_field, d.positive_above, d.negative_below)]


def prepare_data(spec: CarmaSpec, lm: LoadedModel, template: str) -> tuple[Splits, dict[str, int]]:
    """Encoded train/validation/test splits for this tokenizer, and counts of what was dropped."""
    parts = load_examples(spec)
    if spec.data.task == "sc":
        for part in parts:
            check_sentiment_labels(part)
    dropped: dict[str, int] = {}
    encoded: list[list[Encoded]] = []
    for part in parts:
        kept, lost = encode(part, lm.tokenizer, template, spec.data.max_length)
        encoded.append(kept)
        for key, n in lost.items():
            dropped[key] = dropped.get(key, 0) + n
    if len(encoded) == 1:
        splits = split(encoded[0], spec.data.split_seed, spec.data.max_examples)
    else:
        limit = spec.data.max_examples
        splits = Splits(*(part[:limit] if limit else part for part in encoded))
    if not splits.train or not splits.validation or not splits.test:
        raise RunError(
            f"too few examples with a single-token answer for {spec.model.name}: train {len(splits.train)}, "
            f"validation {len(splits.validation)}, test {len(splits.test)} (dropped: {dropped})"
        )
    return splits, dropped


def layer_range(spec: CarmaSpec, num_layers: int) -> tuple[int, int]:
    """The MI range (and the stability range unless ``carma.stability_layers``), blocks counted from 0."""
    first, last = spec.carma.layers or default_layer_range(num_layers)
    if last >= num_layers:
        raise RunError(
            f"carma.layers {[first, last]} is past the depth of {spec.model.name}: "
            f"{num_layers} blocks, 0..{num_layers - 1}"
        )
    return first, last


def stability_range(spec: CarmaSpec, num_layers: int) -> tuple[int, int] | None:
    """``carma.stability_layers`` checked against the depth; None = the MI range."""
    if spec.carma.stability_layers is None:
        return None
    first, last = spec.carma.stability_layers
    if last >= num_layers:
        raise RunError(
            f"carma.stability_layers {[first, last]} is past the depth of {spec.model.name}: "
            f"{num_layers} blocks, 0..{num_layers - 1}"
        )
    return first, last


def cap_layers(spec: CarmaSpec, num_layers: int) -> list[int]:
    if spec.cap.layers is not None:
        if max(spec.cap.layers) >= num_layers:
            raise RunError(
                f"cap.layers {spec.cap.layers} goes past the depth of {spec.model.name}: 0..{num_layers - 1}"
            )
        return sorted(set(spec.cap.layers))
    points = min(spec.cap.points, num_layers)
    return sorted({int(x) for x in np.linspace(0, num_layers - 1, points).round()})


class BestCheckpoint:
    """The model weights of the best validation accuracy so far (on the CPU), its step and accuracy."""

    def __init__(self) -> None:
        self.step: int | None = None
        self.accuracy = -1.0
        self.state: dict[str, Tensor] | None = None

    def offer(self, model: nn.Module, step: int, accuracy: float) -> bool:
        if accuracy <= self.accuracy:
            return False
        self.step, self.accuracy = step, accuracy
        self.state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
        return True

    def state_dict(self) -> dict[str, Any]:
        return {"step": self.step, "accuracy": self.accuracy, "state": self.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.step, self.accuracy, self.state = state["step"], state["accuracy"], state["state"]


def train(
    spec: CarmaSpec,
    lm: LoadedModel,
    splits: Splits,
    layers: tuple[int, int],
    ctx: RunContext,
    device: torch.device,
    total_work: int,
) -> tuple[BestCheckpoint, int, float | None, bool]:
    """Fine-tune (``ft``: lambda 0) or CARMA-tune; returns (best checkpoint, steps, mean step seconds,
    stopped)."""
    t = spec.train
    lam = 0.0 if spec.variant == "ft" else spec.carma.lambda_
    objective = CarmaObjective(
        CarmaConfig(
            lam=lam,
            gamma=spec.carma.gamma,
            eta=spec.carma.eta,
            layers=layers,
            stability_layers=stability_range(spec, lm.num_layers),
            temperature=spec.carma.temperature,
            num_negatives=spec.carma.num_negatives,
        ),
        lm.num_layers,
    )
    pad_id = int(lm.tokenizer.pad_token_id)
    stream = EpochStream(splits.train, t.batch_size, pad_id, spec.seed)
    steps = stream.steps_per_epoch * t.epochs
    if t.max_steps is not None:
        steps = min(steps, t.max_steps)
    cfg = TrainConfig(
        steps=steps,
        lr=t.lr,
        warmup_steps=t.warmup_steps,
        final_lr_fraction=0.0,
        schedule="linear",
        weight_decay=t.weight_decay,
        grad_clip=t.grad_clip,
        log_every=t.log_every,
        eval_interval=t.eval_interval,
        checkpoint_every=t.checkpoint_every,
    )

    def loss_fn(model: nn.Module, batch: Batch) -> tuple[Tensor, dict[str, Any]]:
        loss, metrics = objective(model, batch.to(device))
        return loss, dict(metrics)

    trainer = Trainer(lm.model, stream, loss_fn, cfg, device)
    best = BestCheckpoint()
    resumed = ctx.load_checkpoint()
    if resumed is not None:
        state, step = resumed
        trainer.load_state_dict(state["trainer"])
        best.load_state_dict(state["best"])
        ctx.log(f"resumed from step {step}")

    clock = {"last": time.perf_counter(), "step": trainer.step, "seconds": 0.0, "counted": 0}

    def on_log(out: StepOutput) -> None:
        now = time.perf_counter()
        done = out.step - clock["step"]
        scalars = out.scalars()
        if done > 0:
            scalars["step_time"] = (now - clock["last"]) / done
            clock["seconds"] += now - clock["last"]
            clock["counted"] += done
        clock["last"], clock["step"] = now, out.step
        ctx.log_metrics(scalars, out.step)
        ctx.progress(out.step, total_work, f"train step {out.step}/{steps} loss {scalars['loss']:.4f}")

    def validate(model: nn.Module, step: int) -> dict[str, float]:
        result = evaluate(model, splits.validation, t.eval_batch_size, pad_id, device)
        return {"validation_acc": result.accuracy, "validation_loss": result.loss}

    def on_eval(step: int, metrics: dict[str, float]) -> None:
        best.offer(lm.model, step, metrics["validation_acc"])
        ctx.log_metrics(metrics, step)
        clock["last"] = time.perf_counter()  # evaluation time is no step time

    def save_checkpoint(state: dict[str, Any], step: int) -> None:
        if step < steps:  # the end needs no resume point: the evaluations after it are re-run
            ctx.save_checkpoint({"trainer": state, "best": best.state_dict()}, step)

    outcome = trainer.fit(
        on_log=on_log,
        evaluate=validate,
        on_eval=on_eval,
        save_checkpoint=save_checkpoint,
        should_stop=ctx.should_stop,
    )
    mean_step = clock["seconds"] / clock["counted"] if clock["counted"] else None
    return best, outcome.step, mean_step, outcome.stopped


def synonym_rows(
    outcomes: list[SynonymOutcome], items: list[Encoded], before: list[int], tokenizer: Any
) -> list[dict[str, Any]]:
    """The per-example table ``synonyms``: one row per rate, seed and originally-correct test item: its
    input, the words replaced and by what, the input after, the prediction before and after (decoded)."""

    def word(token_id: int) -> str:
        return str(tokenizer.decode([token_id])).strip()

    rows = []
    for o in outcomes:
        for it in o.items:
            item = items[it.index]
            rows.append(
                {
                    "key": f"rate-{o.rate:g}/seed-{it.seed}/item-{it.index}",
                    "item": it.index,
                    "rate": o.rate,
                    "seed": it.seed,
                    "label": item.example.label,
                    "original": item.example.text,
                    "replaced_text": it.text,
                    "replaced": [{"word": w, "synonym": syn} for w, syn in it.replaced],
                    "prediction_before": word(before[it.index]),
                    "prediction_after": word(it.prediction),
                    "correct_after": it.correct,
                }
            )
    return rows


def run(spec: CarmaSpec, ctx: RunContext) -> None:
    device = torch.device(ctx.device)
    torch.manual_seed(spec.seed)
    dtype = torch.bfloat16 if spec.model.dtype == "bfloat16" else torch.float32
    # every file the spec names is checked before the model loads (a refusal costs nothing)
    if spec.data.source in ("jsonl", "csv") and spec.data.path:
        confined.data_file(spec.data.path, "data.path")
    synonym_map = None
    if spec.synonyms.enabled and spec.synonyms.source == "json" and spec.synonyms.map_path:
        synonym_map = str(confined.data_file(spec.synonyms.map_path, "synonyms.map_path"))
    try:
        lm = load_model(spec.model.name, seed=spec.seed, dtype=dtype)
    except ModelNotFound as exc:
        raise RunError(f"model.name: {exc}") from None
    lm.model.to(device)  # type: ignore[arg-type]
    n = lm.num_layers
    trained = spec.variant != "original"
    layers = layer_range(spec, n)
    stability = stability_range(spec, n)
    cap_starts = cap_layers(spec, n) if spec.cap.enabled else []
    template = prompt_template(spec.data.task, lm.model_type, spec.data.prompt)
    splits, dropped = prepare_data(spec, lm, template)
    lam = None if not trained else (0.0 if spec.variant == "ft" else spec.carma.lambda_)
    ctx.log_params(
        {
            **spec.model_dump(mode="json"),
            "derived": {
                "num_layers": n,
                "carma_layers": list(layers),
                "carma_stability_layers": list(stability or layers),
                "lambda": lam,
                "model_type": lm.model_type,
                "model_source": lm.source,
                "parameters": sum(p.numel() for p in lm.model.parameters()),
                "prompt": template,
                "train_size": len(splits.train),
                "validation_size": len(splits.validation),
                "test_size": len(splits.test),
                "dropped_multi_token_label": dropped.get("multi_token_label", 0),
                "dropped_too_long": dropped.get("too_long", 0),
                "cap_layers": cap_starts,
            },
        }
    )
    train_steps = 0
    if trained:
        t = spec.train
        per_epoch = -(-len(splits.train) // t.batch_size)
        train_steps = per_epoch * t.epochs if t.max_steps is None else min(per_epoch * t.epochs, t.max_steps)
    total_work = train_steps + 2  # + test/CAP, + synonyms
    pad_id = int(lm.tokenizer.pad_token_id)
    best_step: int | None = None
    mean_step: float | None = None
    steps = 0
    if trained:
        best, steps, mean_step, stopped = train(spec, lm, splits, layers, ctx, device, total_work)
        if stopped:
            ctx.log(f"stopped at step {steps}; checkpoint saved")
            return
        if best.state is not None:
            lm.model.load_state_dict(best.state)
            best_step = best.step
            ctx.log(f"best validation accuracy {best.accuracy:.4f} at step {best.step}: restored")
    model = lm.model.eval()
    validation = evaluate(model, splits.validation, spec.train.eval_batch_size, pad_id, device)
    test = evaluate(model, splits.test, spec.train.eval_batch_size, pad_id, device)
    ctx.log_metrics({"test_acc": test.accuracy, "test_loss": test.loss}, steps)
    common = {"variant": spec.variant, "model": spec.model.name, "task": spec.data.task, "lambda": lam}
    ctx.log_result(
        CarmaEval.model_validate(
            {
                **common,
                "gamma": spec.carma.gamma if spec.variant == "carma" else None,
                "eta": spec.carma.eta if spec.variant == "carma" else None,
                "layers": list(layers) if spec.variant == "carma" else None,
                "stability_layers": list(stability) if spec.variant == "carma" and stability else None,
                "num_layers": n,
                "train_size": len(splits.train),
                "validation_size": len(splits.validation),
                "test_size": len(splits.test),
                "steps": steps,
                "best_step": best_step,
                "validation_acc": validation.accuracy,
                "test_acc": test.accuracy,
                "test_loss": test.loss,
                "step_seconds": mean_step,
            }
        )
    )
    ctx.progress(train_steps + 1, total_work, f"test accuracy {test.accuracy:.4f}; CAP")
    if spec.cap.enabled:
        items = splits.test[: spec.cap.max_items] if spec.cap.max_items else splits.test
        eval_batches = [b.to(device) for b in batches(items, spec.train.eval_batch_size, pad_id)]
        curves = cap_curve(model, eval_batches, cap_starts, spec.cap.protocols)
        for protocol in spec.cap.protocols:
            points = [CapPoint(layer=L, depth=x, accuracy=a) for L, x, a in curves.accuracy(protocol)]
            ctx.log_result(
                CapCurve.model_validate(
                    {
                        **common,
                        "protocol": protocol,
                        "num_layers": n,
                        "items": curves.total,
                        "clean_acc": curves.clean_accuracy,
                        "points": points,
                    }
                )
            )
    ctx.progress(train_steps + 2, total_work, "synonyms")
    if spec.synonyms.enabled:
        syn = spec.synonyms
        count = syn.max_items or len(splits.test)
        source = make_source(syn.source, synonym_map)
        outcomes = synonym_intervention(
            model,
            lm.tokenizer,
            template,
            splits.test[:count],
            test.correct[:count],
            source,
            syn.rates,
            syn.seeds,
            stopwords(),
            spec.train.eval_batch_size,
            device,
        )
        for o in outcomes:
            ctx.log_result(
                SynonymConsistency.model_validate(
                    {
                        **common,
                        "rate": o.rate,
                        "source": syn.source,
                        "seeds": o.seeds,
                        "consist_syn": o.consist_syn,
                        "mean": o.mean,
                        "std": o.std,
                        "cv": o.cv,
                        "correct_before": o.correct_before,
                        "changed": o.changed,
                    }
                )
            )
        ctx.log_examples(
            "synonyms", synonym_rows(outcomes, splits.test[:count], test.predictions, lm.tokenizer)
        )
    ctx.progress(total_work, total_work, f"done: test accuracy {test.accuracy:.4f}")
