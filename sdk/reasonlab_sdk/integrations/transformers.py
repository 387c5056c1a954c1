"""A Hugging Face ``Trainer`` logs into ReasonLab: ``Trainer(..., callbacks=[ReasonLabCallback()])``
(docs/tracking.md, "Transformers").

The callback opens a run at the start of training (``reasonlab_sdk.init``; project and experiment from its
arguments or ``REASONLAB_PROJECT`` / ``REASONLAB_EXPERIMENT``) whose config is the training arguments and the
model's configuration, logs every ``on_log`` at the trainer's global step, and finishes the run at the end
of training. Only the main process of a distributed run logs. Pass ``run=`` to log into a run of your own
instead (the callback then leaves finishing it to you).

Keys follow the convention users of other trackers know: ``eval_loss`` is ``eval/loss``, ``test_acc``
``test/acc``, every other key ``train/<key>``; the end-of-training statistics (runtime, throughput, total
FLOs, the mean training loss) go into the run's summary, not its curves.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from reasonlab_sdk.tracking import Run, init

# what Trainer logs once, at the end of training: a run's summary values rather than one-point curves
SUMMARY_KEYS = frozenset(
    {"train_runtime", "train_samples_per_second", "train_steps_per_second", "train_loss", "total_flos"}
)
_PREFIXES = (("eval_", "eval/"), ("test_", "test/"))


def metric_name(key: str) -> str:
    """The ReasonLab metric key of a Trainer log key (``eval_loss`` -> ``eval/loss``, ``loss`` ->
    ``train/loss``)."""
    for prefix, namespace in _PREFIXES:
        if key.startswith(prefix):
            return namespace + key[len(prefix) :]
    return "train/" + key


def _number(value: Any) -> float | None:
    """A loggable number, or None for what is not one (Trainer also logs strings and lists at times)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _jsonable(value: Any) -> Any:
    """A training argument or config value as the run's config stores it (JSON; others as text)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return str(value)


class ReasonLabCallback(TrainerCallback):  # type: ignore[misc]  # transformers ships no type stubs
    """Log a ``Trainer``'s run to ReasonLab. Keyword arguments not named here go to ``reasonlab_sdk.init``
    (``tags``, ``group``, ``id``, ``resume``, ``mode``, ``api_url``, ``token``, ``client``)."""

    def __init__(
        self,
        project: str | None = None,
        experiment: str | None = None,
        name: str | None = None,
        run: Run | None = None,
        **init_kwargs: Any,
    ) -> None:
        self.project = project or os.environ.get("REASONLAB_PROJECT", "default")
        self.experiment = experiment or os.environ.get("REASONLAB_EXPERIMENT", "transformers")
        self.name = name
        self.run = run
        self._owns_run = run is None
        self._init_kwargs = init_kwargs

    def _config(self, args: TrainingArguments, model: Any) -> dict[str, Any]:
        config: dict[str, Any] = {"training_args": _jsonable(args.to_sanitized_dict())}
        model_config = getattr(model, "config", None)
        if model_config is not None and hasattr(model_config, "to_diff_dict"):
            config["model"] = _jsonable(model_config.to_diff_dict())
        return config

    def on_train_begin(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        model: Any = None,
        **kwargs: Any,
    ) -> None:
        if not state.is_world_process_zero or self.run is not None:
            return
        self.run = init(
            project=self.project,
            experiment=self.experiment,
            name=self.name or (args.run_name if args.run_name != args.output_dir else None),
            config=self._config(args, model),
            **self._init_kwargs,
        )

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if not state.is_world_process_zero or self.run is None or not logs:
            return
        points: dict[str, float] = {}
        for key, value in logs.items():
            number = _number(value)
            if number is None:
                continue
            if key in SUMMARY_KEYS:
                self.run.summary[key] = number
            else:
                points[metric_name(key)] = number
        if points:
            self.run.log(points, step=state.global_step)

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if state.is_world_process_zero and self.run is not None and self._owns_run:
            self.run.finish()
            self.run = None
