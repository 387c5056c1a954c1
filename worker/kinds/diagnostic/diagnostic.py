"""Kind ``diagnostic``: the platform's self-test (docs/experiments/diagnostic.md).

Trains the core's MLP regression and exercises every RunContext path a research kind uses: params, a
loss curve, progress, checkpoints and exact resume, cooperative cancel, a result record, and (with
``fail_at_step``) the failure path.
"""

from __future__ import annotations

import logging
import time

from worker.core.diagnostic import DiagnosticTrainer
from worker.specs.diagnostic.diagnostic import DiagnosticResult, DiagnosticSpec
from worker.tracking.context import RunContext

logger = logging.getLogger(__name__)


class DiagnosticFailure(RuntimeError):
    """The failure the spec asked for with ``train.fail_at_step``."""


def run(spec: DiagnosticSpec, ctx: RunContext) -> None:
    train = spec.train
    trainer = DiagnosticTrainer(
        n_samples=spec.data.n_samples,
        n_features=spec.data.n_features,
        noise=spec.data.noise,
        hidden=spec.model.hidden,
        layers=spec.model.layers,
        batch_size=train.batch_size,
        lr=train.lr,
        seed=spec.seed,
        device=ctx.device,
    )
    ctx.log_params(spec.model_dump(mode="json"))

    checkpoint = ctx.load_checkpoint()
    resumed_from: int | None = None
    if checkpoint is not None:
        state, resumed_from = checkpoint
        trainer.load_state_dict(state["trainer"])
        initial_loss = float(state["initial_loss"])
        logger.info("diagnostic: resuming from the checkpoint of step %d", resumed_from)
    else:
        initial_loss = trainer.evaluate()
        logger.info("diagnostic: %d parameters, initial loss %.6f", trainer.parameter_count, initial_loss)
    start = resumed_from or 0

    def checkpoint_state() -> dict[str, object]:
        return {"trainer": trainer.state_dict(), "initial_loss": initial_loss}

    ctx.progress(start, train.steps, "training")
    for step in range(start + 1, train.steps + 1):
        if ctx.should_stop():
            ctx.save_checkpoint(checkpoint_state(), step - 1)
            logger.info("diagnostic: stop requested, checkpointed step %d", step - 1)
            return
        # A resumed run has got past its failure once; failing again would make retry useless.
        if train.fail_at_step == step and resumed_from is None:
            raise DiagnosticFailure(f"fail_at_step={step} (requested by the spec)")
        loss = trainer.train_step()
        if step % train.log_every == 0 or step == train.steps:
            ctx.log_metrics({"loss": loss}, step)
        if step % train.checkpoint_every == 0:
            ctx.save_checkpoint(checkpoint_state(), step)
        ctx.progress(step, train.steps, "training")
        if train.step_delay:
            time.sleep(train.step_delay)

    final_loss = trainer.evaluate()
    ctx.log_metrics({"final_loss": final_loss}, train.steps)
    ctx.log_result(
        DiagnosticResult(
            final_loss=final_loss,
            initial_loss=initial_loss,
            steps=train.steps,
            resumed_from_step=resumed_from,
            parameters=trainer.parameter_count,
        )
    )
    ctx.progress(train.steps, train.steps, "done")
    logger.info("diagnostic: final loss %.6f after %d steps", final_loss, train.steps)
