"""The model store: causal LMs by tiny preset, alias (GGUF converted once), local path or HF id."""

from worker.core.models.presets import PRESETS
from worker.core.models.store import (
    ALIASES,
    LoadedModel,
    ModelNotFound,
    Placement,
    PlacementError,
    converted_path,
    input_device,
    load_model,
)

__all__ = [
    "ALIASES",
    "PRESETS",
    "LoadedModel",
    "ModelNotFound",
    "Placement",
    "PlacementError",
    "converted_path",
    "input_device",
    "load_model",
]
