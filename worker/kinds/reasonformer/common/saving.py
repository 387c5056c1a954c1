"""Saving a trained model with its tokenizer under the run's ``MODEL_DIR`` (what ``reasonformer_finetune``
and ``topk_eval`` load)."""

from __future__ import annotations

from pathlib import Path

from torch import nn
from transformers import PreTrainedModel

from worker.core.reasonformer.build import MODEL_DIR
from worker.core.reasonformer.data.tokenizer import TextTokenizer


def save_model(model: nn.Module, tokenizer: TextTokenizer, out_dir: Path) -> Path:
    path = out_dir / MODEL_DIR
    # the kinds build and load Hugging Face models only: another module here is a programming error
    assert isinstance(model, PreTrainedModel), f"cannot save a {type(model).__name__}"
    model.save_pretrained(path)
    tokenizer.save(path)
    return path
