"""A plain PyTorch loop logs into ReasonLab without a ``.item()`` per step (docs/tracking.md, "PyTorch")::

    import reasonlab_sdk as rl
    from reasonlab_sdk.integrations.torch import StepLogger

    with rl.init(experiment="mnist", config=cfg) as run:
        steps = StepLogger(run, model, optimizer, every=50)
        for batch in loader:
            loss = model(batch).mean()
            loss.backward()
            steps.step(loss, acc=(pred == y).float().mean())   # after backward, before zero_grad
            optimizer.step(); optimizer.zero_grad()
        steps.close()

``step`` keeps the values it is given as detached tensors (no copy to the host, no wait on the device) and
every ``every`` steps reads them all with one transfer, logging each at its own step: a GPU loop pays one
synchronisation per ``every`` steps instead of one per value per step. On those steps it also logs each
parameter group's learning rate (``lr``, or ``lr/<i>`` with several groups) and, with ``grad_norm=True``,
the global L2 norm of the model's gradients (``grad_norm``; computed on the device at that step).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from reasonlab_sdk.tracking import Run


def _scalar(name: str, value: Any) -> torch.Tensor | float:
    """A value of one step: a tensor as a detached 0-d float tensor on its own device, a number as it is."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"{name}: a scalar tensor is needed, got shape {tuple(value.shape)}")
        return value.detach().reshape(()).float()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name}: a number or a scalar tensor is needed, not {type(value).__name__}")
    return float(value)


def grad_norm(parameters: Iterable[torch.nn.Parameter]) -> torch.Tensor | None:
    """The L2 norm of all gradients together (the norm of the norms), on their device; None without any."""
    norms = [p.grad.detach().float().norm(2) for p in parameters if p.grad is not None]
    if not norms:
        return None
    devices = {n.device for n in norms}
    device = next(iter(devices))
    return torch.stack([n.to(device) for n in norms]).norm(2)


class StepLogger:
    """Buffers a loop's per-step values and logs them to ``run`` every ``every`` steps (and at ``close``)."""

    def __init__(
        self,
        run: Run,
        model: torch.nn.Module | None = None,
        optimizer: torch.optim.Optimizer | None = None,
        *,
        every: int = 50,
        grad_norm: bool = True,
        start_step: int = 0,
    ) -> None:
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be a positive integer, not {every!r}")
        self.run, self.model, self.optimizer, self.every = run, model, optimizer, every
        self.log_grad_norm = grad_norm and model is not None
        self.global_step = start_step
        self._pending: list[tuple[int, dict[str, torch.Tensor | float]]] = []

    def step(self, loss: Any = None, **values: Any) -> None:
        """Record this step's ``loss`` and other scalar ``values`` (tensors or numbers); the step count goes
        on by one."""
        row = {name: _scalar(name, v) for name, v in ({"loss": loss} | values).items() if v is not None}
        at = self.global_step
        self.global_step += 1
        if at % self.every == 0:
            if self.optimizer is not None:
                groups = self.optimizer.param_groups
                for i, group in enumerate(groups):
                    row["lr" if len(groups) == 1 else f"lr/{i}"] = float(group["lr"])
            if self.log_grad_norm and self.model is not None:
                norm = grad_norm(self.model.parameters())
                if norm is not None:
                    row["grad_norm"] = norm
        self._pending.append((at, row))
        if len(self._pending) >= self.every:
            self.flush()

    def flush(self) -> None:
        """Read the buffered values (one transfer per device) and log them, each at its step."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        rows: list[dict[str, float]] = [{} for _ in pending]
        tensors: dict[torch.device, list[tuple[int, str, torch.Tensor]]] = {}
        for i, (_, row) in enumerate(pending):
            for name, value in row.items():
                if isinstance(value, torch.Tensor):
                    tensors.setdefault(value.device, []).append((i, name, value))
                else:
                    rows[i][name] = value
        for held in tensors.values():  # one read per device
            read = torch.stack([t for _, _, t in held]).cpu().tolist()
            for (i, name, _), number in zip(held, read, strict=True):
                rows[i][name] = number
        for (at, _), values in zip(pending, rows, strict=True):
            if values:
                self.run.log(values, step=at)

    def close(self) -> None:
        """Log what is still buffered (call it before ``run.finish``)."""
        self.flush()

    def __enter__(self) -> StepLogger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
