"""Kind ``smoe_sraven``: train a (sparse mixture-of-experts) transformer on SRAVEN and report ID-test and
OOD accuracy, one cell of the SMoE paper's (M x top-k) grid (004, section 2.1, figures 1-5).

Metrics: ``loss``, ``ce_loss``, ``lr``, ``train_acc`` (training batch, all M right), ``test_acc``,
``ood_acc``, ``test_acc/f{j}``, ``ood_acc/f{j}`` (per query-feature slot), ``moe/load/e{i}`` (fraction of
routed slots per expert, mean over layers), ``moe/entropy`` (mean router entropy, nats), and, with more
than one MoE layer, the same per layer as ``moe/l{layer}/...``; ``moe/load_balance_loss`` when its coefficient is on. Result: ``sraven_cell``.

Outputs: the trained model under ``model/`` (``worker.core.sraven.saved``, with the run's spec), which
``topk_eval`` evaluates at other experts-per-token (train at k, evaluate at k').
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from worker.core.moe import MoEAux, MoEConfig
from worker.core.sraven.generator import (
    NUM_RULES,
    RULES,
    OODMissesRuleWarning,
    SravenBatch,
    SravenGenerator,
    SravenStream,
)
from worker.core.sraven.model import SravenTransformer, SravenTransformerConfig
from worker.core.sraven.saved import save_sraven_model
from worker.core.train import Scalar, StepOutput, TrainConfig, Trainer
from worker.specs.smoe.smoe_sraven import SmoeSravenSpec, SravenCell
from worker.tracking.context import RunContext

MODEL_DIR = "model"  # the trained model under the run's outputs (read by topk_eval)


def build_model_config(spec: SmoeSravenSpec) -> SravenTransformerConfig:
    m, M = spec.model, spec.data.num_features
    moe = None
    if spec.moe is not None:
        moe = MoEConfig(
            d_model=m.d_model,
            num_experts=spec.moe.num_experts,
            top_k=spec.moe.top_k,
            expert_hidden=spec.moe.expert_hidden,
            activation="gelu",
            load_balance_coef=spec.moe.load_balance_coef,
            router_noise=spec.moe.router_noise,
            dispatch="sorted",
        )
    seq_len = 9 * M
    return SravenTransformerConfig(
        d_model=m.d_model,
        num_layers=m.num_layers,
        num_heads=m.num_heads,
        qk_dim=m.qk_dim,
        v_dim=m.v_dim,
        mlp_hidden=m.mlp_hidden,
        attention=m.attention,
        # the reference sets buckets = max distance = the sequence length (36 at M = 4)
        rel_num_buckets=seq_len,
        rel_max_distance=seq_len,
        rel_bidirectional=m.rel_bidirectional,
        moe=moe,
    )


def build_train_config(spec: SmoeSravenSpec) -> TrainConfig:
    t = spec.train
    return TrainConfig(
        steps=t.steps,
        lr=t.lr,
        warmup_steps=t.warmup_steps,
        final_lr_fraction=0.1,
        weight_decay=t.weight_decay,
        grad_clip=t.grad_clip,
        bf16=t.bf16,
        compile=t.compile,
        log_every=t.log_every,
        eval_interval=t.eval_interval,
        checkpoint_every=t.checkpoint_every,
    )


def moe_metrics(moe_aux: list[MoEAux]) -> dict[str, Scalar]:
    """Per-expert load (fraction of the N*k routed slots) and router entropy, averaged over layers and,
    with more than one MoE layer, per layer; detached tensors, read only when logged. (With one layer the
    mean is that layer: its per-layer series would repeat the mean ones, point for point.)"""
    if not moe_aux:
        return {}
    out: dict[str, Scalar] = {}
    loads = []
    per_layer = len(moe_aux) > 1
    for layer, aux in enumerate(moe_aux):
        load = aux.tokens_per_expert.float() / aux.selected_experts.numel()  # [E], sums to 1
        loads.append(load)
        if not per_layer:
            continue
        out[f"moe/l{layer}/entropy"] = aux.routing_entropy.detach()
        for e in range(load.shape[0]):
            out[f"moe/l{layer}/load/e{e}"] = load[e]
    mean_load = torch.stack(loads).mean(dim=0)  # [E]
    for e in range(mean_load.shape[0]):
        out[f"moe/load/e{e}"] = mean_load[e]
    out["moe/entropy"] = torch.stack([a.routing_entropy.detach() for a in moe_aux]).mean()
    return out


def accuracies(query_logits: Tensor, targets: Tensor) -> tuple[Tensor, Tensor]:
    """(per-problem all-M-right [B] bool, per-feature-slot right [B, M] bool) (REFERENCE.md: ``acc`` and
    ``acc_per_feature``)."""
    right = query_logits.argmax(dim=-1) == targets  # [B, M]
    return right.all(dim=-1), right


@dataclass
class EvalSet:
    name: str
    tokens: Tensor  # [N, 9*M, 8]
    targets: Tensor  # [N, M]

    @classmethod
    def of(cls, name: str, batch: SravenBatch) -> EvalSet:
        return cls(name, batch.tokens(), batch.targets())


def evaluate_sets(
    model: nn.Module,
    sets: list[EvalSet],
    batch_size: int,
    device: torch.device,
    per_item: dict[str, list[bool]] | None = None,
) -> dict[str, float]:
    """``{name}_acc`` (all M right) and ``{name}_acc/f{j}`` for every set, and ``{name}_loss``.
    ``per_item``, when given, receives per set whether each item had all M right (the per-example table)."""
    out: dict[str, float] = {}
    for s in sets:
        N, M = s.targets.shape
        all_right, loss_sum = 0, 0.0
        feature_right = torch.zeros(M, dtype=torch.long)
        for i in range(0, N, batch_size):
            tokens = s.tokens[i : i + batch_size].to(device)
            targets = s.targets[i : i + batch_size].to(device)
            logits, loss, _ = model(tokens, targets)
            acc, right = accuracies(logits[:, -M:].float(), targets)
            all_right += int(acc.sum())
            if per_item is not None:
                per_item.setdefault(s.name, []).extend(bool(a) for a in acc.tolist())
            feature_right += right.sum(dim=0).cpu()
            loss_sum += float(loss) * len(targets)
        out[f"{s.name}_acc"] = all_right / N
        out[f"{s.name}_loss"] = loss_sum / N
        for j, value in enumerate((feature_right.double() / N).tolist()):
            out[f"{s.name}_acc/f{j}"] = value
    return out


PROGRESS_LINES = 10  # progress lines a run writes to its log over its steps (the Logs tab, `runs logs`)


def progress_line_every(steps: int) -> int:
    """Steps between two progress lines in the run's log: about PROGRESS_LINES over the run, at least 1."""
    return max(1, steps // PROGRESS_LINES)


def ood_warning_explained(generator: SravenGenerator, message: str) -> str:
    """The generator's OODMissesRuleWarning as a run's log line that says what it means and what to do."""
    missing = sorted(set(range(NUM_RULES)) - generator.ood_rules)
    names = ", ".join(RULES[r] for r in missing)
    return (
        f"note: {message}. The held-out (OOD) tasks are new combinations of rules, and none of them uses "
        f"{names}: the OOD accuracy says nothing about those rules, only about new combinations of the "
        "others (the reference implementation warns of the same split). It is not an error. To cover every "
        "rule, raise data.ood_fraction or pick another data.split_seed."
    )


def run(spec: SmoeSravenSpec, ctx: RunContext) -> None:
    device = torch.device(ctx.device)
    M = spec.data.num_features
    torch.manual_seed(spec.seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", OODMissesRuleWarning)
        generator = SravenGenerator(
            M,
            ood_fraction=spec.data.ood_fraction,
            permute_features=spec.data.permute_features,
            split_seed=spec.data.split_seed,
            holdout_buckets=spec.data.holdout_buckets,
        )
    for warning in caught:
        if issubclass(warning.category, OODMissesRuleWarning):
            ctx.log(ood_warning_explained(generator, str(warning.message)))
        else:  # anything else the generator warns of goes on as it would have
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    train_seed = spec.seed if spec.data.train_seed is None else spec.data.train_seed
    stream = SravenStream(generator, spec.train.batch_size, train_seed)
    model = SravenTransformer(build_model_config(spec))
    cfg = build_train_config(spec)

    def loss_fn(model: nn.Module, batch: SravenBatch) -> tuple[Tensor, dict[str, Scalar]]:
        targets = batch.targets().to(device)
        logits, loss, aux = model(batch.tokens().to(device), targets)
        assert loss is not None and aux.ce_loss is not None
        acc, _ = accuracies(logits[:, -M:].detach().float(), targets)
        metrics: dict[str, Scalar] = {"ce_loss": aux.ce_loss.detach(), "train_acc": acc.float().mean()}
        if aux.load_balance_loss is not None and spec.moe is not None and spec.moe.load_balance_coef > 0:
            metrics["moe/load_balance_loss"] = aux.load_balance_loss.detach()
        metrics.update(moe_metrics(aux.moe))
        return loss, metrics

    trainer = Trainer(model, stream, loss_fn, cfg, device)
    resumed = ctx.load_checkpoint()
    if resumed is not None:
        state, step = resumed
        trainer.load_state_dict(state["trainer"])
        ctx.log(f"resumed from step {step}")

    num_params = sum(p.numel() for p in model.parameters())
    ctx.log_params(
        {
            **spec.model_dump(mode="json"),
            "derived": {
                "parameters": num_params,
                "latent_tasks": len(generator.latents_all),
                "ood_tasks": len(generator.ood_idx),
                "seq_len": generator.seq_len,
            },
        }
    )

    sets = [EvalSet.of("test", generator.eval_set("test", spec.train.eval_size, spec.data.test_seed))]
    if len(generator.ood_idx):
        sets.append(EvalSet.of("ood", generator.eval_set("ood", spec.train.eval_size, spec.data.ood_seed)))

    every = progress_line_every(cfg.steps)
    next_line = [every]  # the step at or past which the next progress line goes to the run's log

    def on_log(out: StepOutput) -> None:
        scalars = out.scalars()
        ctx.log_metrics(scalars, out.step)
        message = f"step {out.step}/{cfg.steps} loss {scalars['loss']:.4f}"
        ctx.progress(out.step, cfg.steps, message)
        if out.step >= next_line[0] or out.step == cfg.steps:
            ctx.log(message)
            next_line[0] = (out.step // every + 1) * every

    def on_eval(step: int, metrics: dict[str, float]) -> None:
        ctx.log_metrics(metrics, step)

    def save_checkpoint(state: dict[str, Any], step: int) -> None:
        ctx.save_checkpoint({"trainer": state}, step)

    outcome = trainer.fit(
        on_log=on_log,
        evaluate=lambda model, step: evaluate_sets(model, sets, spec.train.eval_batch_size, device),
        on_eval=on_eval,
        save_checkpoint=save_checkpoint,
        should_stop=ctx.should_stop,
    )
    if outcome.stopped:
        ctx.log(f"stopped at step {outcome.step}; checkpoint saved")
        return
    final = outcome.last_eval or trainer.evaluate(
        lambda model, step: evaluate_sets(model, sets, spec.train.eval_batch_size, device)
    )
    save_sraven_model(
        ctx.out_dir / MODEL_DIR, model, {"spec": spec.model_dump(mode="json"), "steps": outcome.step}
    )
    ctx.log_result(
        SravenCell(
            M=M,
            top_k=spec.moe.top_k if spec.moe is not None else None,
            num_experts=spec.moe.num_experts if spec.moe is not None else None,
            attention=spec.model.attention,
            test_acc=final["test_acc"],
            ood_acc=final.get("ood_acc"),
            per_feature_acc=[final[f"test_acc/f{j}"] for j in range(M)],
            ood_per_feature_acc=[final[f"ood_acc/f{j}"] for j in range(M)] if "ood_acc" in final else None,
            steps=outcome.step,
            test_size=len(sets[0].targets),
            ood_size=len(sets[1].targets) if len(sets) > 1 else None,
        )
    )
