"""Skill-Mix's inputs in its released formats (REFERENCE.md, "Skill-Mix"): a skills CSV with a header row
holding at least ``skill``, ``definition`` and ``example`` (the released file also has ``category``,
``comments``, ``status``, ``added by``: extra columns are kept out of the way), and a topics file with one
topic per line. Only 10% of the paper's lists are public, so users bring their own files; ``data/`` holds
our own small lists (our wording) for tests and the CPU demo.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).parent / "data"
BUILTIN_SKILLS = DATA / "skills.csv"
BUILTIN_TOPICS = DATA / "topics.txt"
REQUIRED_COLUMNS = ("skill", "definition", "example")


class SkillListError(ValueError):
    """A skills or topics file that cannot be used; the message names the file and the line."""


@dataclass(frozen=True)
class Skill:
    name: str
    definition: str
    example: str
    category: str = ""


def load_skills(path: str | Path | None = None) -> list[Skill]:
    """The skills of a Skill-Mix CSV (the built-in list when ``path`` is None), in file order.

    Names are stripped and must be unique (case-insensitively): a combination draws distinct skills.
    """
    path = Path(path) if path is not None else BUILTIN_SKILLS
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        header = [h.strip().lower() for h in reader.fieldnames or []]
        missing = [c for c in REQUIRED_COLUMNS if c not in header]
        if missing:
            raise SkillListError(f"{path}: the header lacks the column(s) {missing} (it has {header})")
        reader.fieldnames = header
        skills: list[Skill] = []
        seen: dict[str, int] = {}
        for line, row in enumerate(reader, start=2):
            name = (row.get("skill") or "").strip()
            if not name:
                continue  # the released file has blank trailing rows
            key = name.lower()
            if key in seen:
                raise SkillListError(f"{path}:{line}: skill {name!r} repeats line {seen[key]}")
            seen[key] = line
            skills.append(
                Skill(
                    name=name,
                    definition=(row.get("definition") or "").strip(),
                    example=(row.get("example") or "").strip(),
                    category=(row.get("category") or "").strip(),
                )
            )
    if not skills:
        raise SkillListError(f"{path}: no skills")
    return skills


def load_topics(path: str | Path | None = None) -> list[str]:
    """The topics of a topics file, one per line (the built-in list when ``path`` is None); blank lines
    and lines starting with ``#`` are skipped, duplicates dropped (first kept)."""
    path = Path(path) if path is not None else BUILTIN_TOPICS
    topics: list[str] = []
    for raw in Path(path).read_text(encoding="utf-8-sig").splitlines():
        topic = raw.strip()
        if topic and not topic.startswith("#") and topic not in topics:
            topics.append(topic)
    if not topics:
        raise SkillListError(f"{path}: no topics")
    return topics
