"""A trained SRAVEN transformer on disk: ``config.json`` (the architecture, and what the caller adds under
``meta``, e.g. the run's spec so an evaluator can rebuild the same test sets) and ``model.pt`` (the state
dict). Written by the ``smoe_sraven`` kind under its outputs; read by ``topk_eval`` (train at k, evaluate at
k')."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from worker.core.moe import MoEConfig
from worker.core.sraven.model import SravenTransformer, SravenTransformerConfig

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.pt"


def save_sraven_model(folder: Path, model: SravenTransformer, meta: dict[str, Any] | None = None) -> Path:
    """Write ``model`` to ``folder`` (created); returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    payload = {"architecture": asdict(model.cfg), "meta": meta or {}}
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    torch.save(state, folder / WEIGHTS_FILE)
    # config last: its presence marks a complete folder
    (folder / CONFIG_FILE).write_text(json.dumps(payload, indent=2))
    return folder


def load_sraven_model(
    folder: Path, device: str | torch.device = "cpu"
) -> tuple[SravenTransformer, dict[str, Any]]:
    """``(model in eval mode, meta)`` of a folder written by ``save_sraven_model``."""
    config_path = folder / CONFIG_FILE
    if not config_path.is_file() or not (folder / WEIGHTS_FILE).is_file():
        raise FileNotFoundError(f"no saved SRAVEN model in {folder} (needs {CONFIG_FILE} and {WEIGHTS_FILE})")
    payload = json.loads(config_path.read_text())
    arch = dict(payload["architecture"])
    moe = arch.pop("moe")
    cfg = SravenTransformerConfig(**arch, moe=MoEConfig(**moe) if moe is not None else None)
    model = SravenTransformer(cfg)
    state = torch.load(folder / WEIGHTS_FILE, map_location="cpu", weights_only=True)
    model.load_state_dict(state)
    return model.to(device).eval(), dict(payload.get("meta") or {})
