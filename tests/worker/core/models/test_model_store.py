"""The model store: tiny presets of the four families, the real SmolLM2-135M from its converted copy,
and a clear error for a model that cannot be found."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

from worker.core.models import PRESETS, ModelNotFound, load_model
from worker.core.models.store import ALIASES, converted_path
from worker.specs.carma.carma import KNOWN_DEPTHS

pytestmark = pytest.mark.usefixtures("one_thread")


def test_preset_depths_are_the_ones_specs_validate_against() -> None:
    for name, preset in PRESETS.items():
        config = preset.config(1000, 0, 1, 1)
        assert config.num_hidden_layers == KNOWN_DEPTHS[name], name
    assert {"smollm2-135m"} <= set(ALIASES) <= set(KNOWN_DEPTHS)


def test_a_model_that_cannot_be_found_names_what_is_understood(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-model")  # neither a folder nor a valid hub id: no network is tried
    with pytest.raises(ModelNotFound) as info:
        load_model(missing)
    message = str(info.value)
    assert f"cannot load model '{missing}'" in message
    assert "tiny-gpt2" in message and "smollm2-135m" in message and "Traceback" not in message


@pytest.mark.slow  # the real 135M model generating: make test, not the inner loop
def test_smollm2_loads_from_the_store_in_seconds_and_answers() -> None:
    """The real 135M model (converted once by `make offline`), loaded from safetensors."""
    converted_path("smollm2-135m")
    start = time.perf_counter()
    lm = load_model("smollm2-135m")
    seconds = time.perf_counter() - start
    assert lm.source == "store" and lm.num_layers == 30 and lm.model_type == "llama", seconds
    assert sum(p.numel() for p in lm.model.parameters()) == pytest.approx(134.5e6, rel=0.01)
    tok = lm.tokenizer
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    ids = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    with torch.no_grad():
        out = lm.model.generate(**ids, max_new_tokens=8, do_sample=False)
    answer = tok.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)
    assert "Paris" in answer, answer
