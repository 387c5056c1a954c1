"""Lay out the offline material once per machine (``make offline``; ``python -m worker.core.models.prepare``):
WordNet 3.0 for nltk, the WordNet IDM examples, the SmolLM2-135M GGUF converted into the model store, and
the repository's example data files (``examples/*.jsonl``) in the offline data store, where specs name
them (``examples/choices.jsonl``; docs/spec-confinement.md). Each step is skipped when its result is
already there."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from worker.core.carma.datasets import wordnet_idm
from worker.core.data.offline import REPO_ROOT, data_root
from worker.core.data.wordnet import layout_wordnet
from worker.core.models.store import converted_path


def example_data() -> list[Path]:
    """Copy ``examples/*.jsonl`` of the repository to ``<data store>/examples/`` (missing ones only)."""
    folder = data_root() / "examples"
    folder.mkdir(parents=True, exist_ok=True)
    copied = []
    for source in sorted((REPO_ROOT / "examples").glob("*.jsonl")):
        target = folder / source.name
        if not target.exists():
            shutil.copyfile(source, target)
            copied.append(target)
    return copied


def main() -> None:
    for what, step in (
        ("WordNet 3.0 for nltk", layout_wordnet),
        ("WordNet IDM examples (nouns)", lambda: wordnet_idm(("n",))),
        ("smollm2-135m in the model store", lambda: converted_path("smollm2-135m")),
        ("example data files in the data store", example_data),
    ):
        start = time.perf_counter()
        step()
        print(f"{what}: ready ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
