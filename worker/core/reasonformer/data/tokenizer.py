"""Tokenizers behind one small interface: a word-level ``SymbolTokenizer`` for the synthetic suite (built
from its vocabulary, no files needed) and ``HFTokenizer`` around a transformers tokenizer (T5's
SentencePiece model, from the hub or a local folder). T5 conventions: pad 0 (also the decoder start), EOS
1 appended to every encoded text."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from worker.core.data.offline import local_model

SYMBOL_VOCAB_FILE = "symbol_vocab.json"


class TextTokenizer(Protocol):
    pad_token_id: int
    eos_token_id: int

    @property
    def vocab_size(self) -> int: ...

    def encode(self, text: str, max_length: int | None = None) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def save(self, path: Path) -> None: ...


class SymbolTokenizer:
    """Whitespace-separated words, each a token of a fixed vocabulary: pad 0, EOS 1, unknown 2."""

    SPECIALS = ("<pad>", "</s>", "<unk>")

    def __init__(self, words: Sequence[str]) -> None:
        words = [w for w in dict.fromkeys(words) if w not in self.SPECIALS]
        self.vocab = [*self.SPECIALS, *words]
        self.index = {w: i for i, w in enumerate(self.vocab)}
        self.pad_token_id, self.eos_token_id, self.unk_token_id = 0, 1, 2

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def encode(self, text: str, max_length: int | None = None) -> list[int]:
        ids = [self.index.get(w, self.unk_token_id) for w in text.split()]
        if max_length is not None:
            ids = ids[: max_length - 1]
        return [*ids, self.eos_token_id]

    def decode(self, ids: Sequence[int]) -> str:
        words = []
        for i in ids:
            if i == self.eos_token_id:
                break
            if i != self.pad_token_id:
                words.append(self.vocab[i] if 0 <= i < len(self.vocab) else "<unk>")
        return " ".join(words)

    def save(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        (path / SYMBOL_VOCAB_FILE).write_text(json.dumps(self.vocab[len(self.SPECIALS) :]))


class HFTokenizer:
    """A transformers tokenizer (e.g. T5's) behind ``TextTokenizer``."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.pad_token_id = int(tokenizer.pad_token_id)
        self.eos_token_id = int(tokenizer.eos_token_id)

    @property
    def vocab_size(self) -> int:
        return len(self.tokenizer)

    def encode(self, text: str, max_length: int | None = None) -> list[int]:
        ids = self.tokenizer(text, truncation=max_length is not None, max_length=max_length)["input_ids"]
        return list(ids)

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=True)).strip()

    def save(self, path: Path) -> None:
        self.tokenizer.save_pretrained(path)


def load_tokenizer(source: str | Path) -> TextTokenizer:
    """The tokenizer saved in a folder (``save``), or a transformers tokenizer by hub id or path. A name
    (``str``) is a folder of the model store or a hub id (``offline.local_model``: ``OutsideStore`` for one
    leading outside the store); a ``Path`` is a folder the platform produced."""
    if isinstance(source, str):
        source = local_model(source)
    path = Path(source)
    if (path / SYMBOL_VOCAB_FILE).is_file():
        return SymbolTokenizer(json.loads((path / SYMBOL_VOCAB_FILE).read_text()))
    from transformers import AutoTokenizer

    return HFTokenizer(AutoTokenizer.from_pretrained(str(source)))
