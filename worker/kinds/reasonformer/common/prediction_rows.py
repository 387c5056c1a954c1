"""The per-example table ``predictions`` of an evaluation: input, prediction, gold answer, whether it is
right and, for a ReasonFormer, the skills routed to at each step."""

from __future__ import annotations

from typing import Any

from torch import nn

from worker.core.reasonformer.evaluate import Predictions
from worker.core.reasonformer.model import ReasonFormerForConditionalGeneration


def prediction_rows(model: nn.Module, pred: Predictions) -> list[dict[str, Any]]:
    """The per-example table ``predictions``: per evaluation instance its input, prediction, gold answer
    and whether it is right; for a ReasonFormer also, per reasoning step, the skills the router
    activated (the top-k of its distribution, or every skill when routing is dense), the distribution
    and the stop gate."""
    rc = model.reasoning if isinstance(model, ReasonFormerForConditionalGeneration) else None
    rows = []
    for i, e in enumerate(pred.examples):
        row: dict[str, Any] = {
            "key": f"{e.task}/{i}",
            "task": e.task,
            "input": e.input,
            "prediction": pred.predictions[i] if i < len(pred.predictions) else None,
            "gold": e.output,
            "correct": pred.correct[i] if i < len(pred.correct) else None,
        }
        if e.options:
            row["options"] = list(e.options)
        if rc is not None and i < len(pred.probs):
            probs = pred.probs[i].float().tolist()  # [S, n]
            gates = pred.stop_gates[i] if i < len(pred.stop_gates) else None
            gate_values = gates.float().tolist() if gates is not None else None
            steps = []
            for step, dist in enumerate(probs):
                order = sorted(range(len(dist)), key=dist.__getitem__, reverse=True)
                chosen = order[: rc.top_k] if rc.top_k is not None else order
                steps.append(
                    {
                        "step": step + 1,
                        "skills": [rc.skills[n] for n in chosen],
                        "probs": {rc.skills[n]: round(p, 4) for n, p in enumerate(dist)},
                        "stop_gate": None if gate_values is None else round(gate_values[step], 4),
                    }
                )
            row["routing"] = steps
        rows.append(row)
    return rows
