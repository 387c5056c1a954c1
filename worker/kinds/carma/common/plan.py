"""What a ``carma`` run's phases share once its model is loaded: the prompt, the data splits, the layer
ranges, lambda and the progress budget."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from worker.core.carma.tasks import Splits, prompt_template
from worker.core.models import LoadedModel
from worker.kinds.carma.common.data import prepare_data
from worker.kinds.carma.common.layers import cap_layers, layer_range, stability_range
from worker.specs.carma.carma import CarmaSpec


@dataclass(frozen=True)
class Plan:
    lm: LoadedModel
    template: str
    splits: Splits
    dropped: dict[str, int]  # examples left out, by reason
    layers: tuple[int, int]  # the MI range
    stability: tuple[int, int] | None  # None: the MI range
    cap_starts: list[int]  # the CAP curve's layers; [] when CAP is off
    trained: bool  # every variant but ``original``
    lam: float | None  # the objective's lambda (``ft``: 0); None when untrained
    train_steps: int

    @property
    def total_work(self) -> int:
        return self.train_steps + 2  # + test/CAP, + synonyms

    @property
    def pad_id(self) -> int:
        return int(self.lm.tokenizer.pad_token_id)

    def record_base(self, spec: CarmaSpec) -> dict[str, Any]:
        """The fields every record of the run starts with: what was trained, on what, with which lambda."""
        return {"variant": spec.variant, "model": spec.model.name, "task": spec.data.task, "lambda": self.lam}


def train_steps(spec: CarmaSpec, train_size: int) -> int:
    t = spec.train
    per_epoch = -(-train_size // t.batch_size)
    return per_epoch * t.epochs if t.max_steps is None else min(per_epoch * t.epochs, t.max_steps)


def plan_of(spec: CarmaSpec, lm: LoadedModel) -> Plan:
    """The ranges checked against the model's depth, then the data encoded for its tokenizer."""
    n = lm.num_layers
    trained = spec.variant != "original"
    layers = layer_range(spec, n)
    stability = stability_range(spec, n)
    cap_starts = cap_layers(spec, n) if spec.cap.enabled else []
    template = prompt_template(spec.data.task, lm.model_type, spec.data.prompt)
    splits, dropped = prepare_data(spec, lm, template)
    lam = None if not trained else (0.0 if spec.variant == "ft" else spec.carma.lambda_)
    steps = train_steps(spec, len(splits.train)) if trained else 0
    return Plan(lm, template, splits, dropped, layers, stability, cap_starts, trained, lam, steps)
