"""What identifies a trained model in the paper's tables besides its architecture: the stage, whether it
was pre-trained and with the routing loss, what was frozen, the few-shot sample, the source run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from worker.core.reasonformer.freeze import Freeze


@dataclass(frozen=True)
class Provenance:
    stage: Literal["pretrain", "finetune"]
    pretrained: bool  # reasoning-centric pre-training (RPT): the model comes from a pretrain run
    modularity: bool  # the skill-routing loss shaped the modules in pre-training (Table 2)
    freeze: Freeze = "none"
    few_shot: str | None = None  # how the training set was subsampled (section 5.3), when it was
    source_run_id: int | None = None
