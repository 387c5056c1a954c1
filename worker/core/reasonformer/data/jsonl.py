"""JSONL loaders (one JSON object per line).

- Pre-training, appendix A of paper 001: ``{"skill": ..., "input": ..., "output": ...}`` with the
  appendix-A prompts already applied, or ``{"skill": ..., "template": ..., "fields": {...}}`` to have them
  applied (``prompts.PRETRAIN_TEMPLATES``). ``skill`` is one skill (wanted at every reasoning step) or a
  list (the skill of each step).
- Downstream multiple choice: ``{"context", "question", "options", "answer"}``, ``answer`` the index of
  the right option or its text.
- Downstream generative: ``{"input", "output"}``.
An optional ``"task"`` names the task (default: the file's stem).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from worker.core.reasonformer.data.example import Example
from worker.core.reasonformer.data.prompts import choice_prompt, pretrain_prompt


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of every non-blank line."""
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if line.strip():
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise ValueError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
                yield number, row


def pretrain_row(row: dict[str, Any], task: str) -> Example:
    skill = row.get("skill")
    skills = (skill,) if isinstance(skill, str) else tuple(skill or ())
    if not skills or not all(isinstance(s, str) and s for s in skills):
        raise ValueError(f"'skill' must be a skill name or a list of them, got {skill!r}")
    if "template" in row:
        source, target = pretrain_prompt(skills[0], str(row["template"]), dict(row.get("fields", {})))
    else:
        source, target = str(row["input"]), str(row["output"])
    return Example(
        task=str(row.get("task", skills[0] if len(skills) == 1 else ">".join(skills))),
        input=source,
        output=target,
        skills=skills,
    )


def choice_row(row: dict[str, Any], task: str) -> Example:
    options = tuple(str(o) for o in row["options"])
    answer = row["answer"]
    index = options.index(str(answer)) if isinstance(answer, str) else int(answer)
    if not 0 <= index < len(options):
        raise ValueError(f"answer {answer!r} is not one of {len(options)} options")
    return Example(
        task=str(row.get("task", task)),
        input=choice_prompt(str(row.get("context", "")), str(row["question"]), options),
        output=options[index],
        options=options,
        answer=index,
    )


def generative_row(row: dict[str, Any], task: str) -> Example:
    return Example(task=str(row.get("task", task)), input=str(row["input"]), output=str(row["output"]))


def load_pretrain_jsonl(path: str | Path) -> list[Example]:
    return _load(path, pretrain_row)


def load_downstream_jsonl(path: str | Path) -> list[Example]:
    """Multiple-choice rows (with ``options``) and generative rows (``input``/``output``) alike."""
    return _load(
        path, lambda row, task: choice_row(row, task) if "options" in row else generative_row(row, task)
    )


def _load(path: str | Path, parse: Any) -> list[Example]:
    task = Path(path).stem
    out = []
    for number, row in read_jsonl(path):
        try:
            out.append(parse(row, task))
        except (KeyError, ValueError, TypeError, AssertionError) as exc:
            raise ValueError(f"{path}:{number}: {exc}") from None
    return out
