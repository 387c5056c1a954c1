"""Lay out the offline material once per machine (``make offline``; ``python -m worker.core.models.prepare``):
WordNet 3.0 for nltk, the WordNet IDM examples, and the SmolLM2-135M GGUF converted into the model store.
Each step is skipped when its result is already there."""

from __future__ import annotations

import time

from worker.core.carma.datasets import wordnet_idm
from worker.core.data.wordnet import layout_wordnet
from worker.core.models.store import converted_path


def main() -> None:
    for what, step in (
        ("WordNet 3.0 for nltk", layout_wordnet),
        ("WordNet IDM examples (nouns)", lambda: wordnet_idm(("n",))),
        ("smollm2-135m in the model store", lambda: converted_path("smollm2-135m")),
    ):
        start = time.perf_counter()
        step()
        print(f"{what}: ready ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
