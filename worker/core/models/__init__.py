"""The model store: causal LMs by tiny preset, alias (GGUF converted once), local path or HF id."""

from worker.core.models.presets import PRESETS
from worker.core.models.store import ALIASES, LoadedModel, ModelNotFound, converted_path, load_model

__all__ = ["ALIASES", "PRESETS", "LoadedModel", "ModelNotFound", "converted_path", "load_model"]
