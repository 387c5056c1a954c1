"""What a script sends to open an external run, and what it gets back."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from backend.runs.schemas import ClaimOut

# bounds of what a script stores per run: a config is a spec (shown and queried like one), a diff and a
# package list are kept for the record, never parsed
MAX_CONFIG_BYTES = 256 * 1024
MAX_DIFF_CHARS = 200_000
MAX_PACKAGES = 2_000
MAX_COMMAND_CHARS = 10_000
# the tags MLflow's own client sets on a run it opens (mlflow.user, mlflow.source.*, ...): MLflow's bounds
MAX_MLFLOW_TAGS = 100
MAX_MLFLOW_TAG_KEY = 250
MAX_MLFLOW_TAG_VALUE = 8000

Resume = Literal["never", "allow", "must"]


class Provenance(BaseModel):
    """Where the run came from, as its script saw it (every field optional: a notebook has no git)."""

    command: str | None = Field(None, max_length=MAX_COMMAND_CHARS, description="the command line")
    git_commit: str | None = Field(None, max_length=64, pattern=r"^[0-9a-fA-F]{4,64}$")
    git_dirty: bool | None = Field(None, description="the work tree had uncommitted changes")
    git_diff: str | None = Field(
        None,
        max_length=MAX_DIFF_CHARS,
        description=f"the uncommitted changes, at most {MAX_DIFF_CHARS} chars",
    )
    python: str | None = Field(None, max_length=100, description="the Python version")
    packages: list[str] = Field(
        default_factory=list, max_length=MAX_PACKAGES, description="installed distributions, `name==version`"
    )
    host: str | None = Field(None, max_length=300)
    mlflow_tags: dict[str, str] = Field(
        default_factory=dict,
        description=f"the run was opened by MLflow's own client: the tags it set under ``mlflow.`` (its user, "
        f"source, git commit, notes, ...), at most {MAX_MLFLOW_TAGS}",
    )

    @field_validator("packages")
    @classmethod
    def _short_names(cls, packages: list[str]) -> list[str]:
        if any(len(p) > 300 for p in packages):
            raise ValueError("a package entry is at most 300 characters")
        return packages

    @field_validator("mlflow_tags")
    @classmethod
    def _mlflow_bounds(cls, tags: dict[str, str]) -> dict[str, str]:
        if len(tags) > MAX_MLFLOW_TAGS:
            raise ValueError(f"at most {MAX_MLFLOW_TAGS} MLflow tags; these are {len(tags)}")
        for key, value in tags.items():
            if not 1 <= len(key) <= MAX_MLFLOW_TAG_KEY or len(value) > MAX_MLFLOW_TAG_VALUE:
                raise ValueError(
                    f"MLflow tag {key[:50]!r}: a key of 1 to {MAX_MLFLOW_TAG_KEY} characters, a value of at "
                    f"most {MAX_MLFLOW_TAG_VALUE}"
                )
        return tags


class ExternalRunIn(BaseModel):
    """Open an external run: a new one, or (``id`` with ``resume`` "allow" or "must") an existing one."""

    experiment: str = Field(
        "external", min_length=1, max_length=300, description="the experiment's name (created if missing)"
    )
    name: str | None = Field(None, max_length=200, description="the run's name; null: its number")
    config: dict[str, Any] = Field(
        default_factory=dict,
        description=f"the script's configuration: the run's spec and params (a JSON object, at most "
        f"{MAX_CONFIG_BYTES} bytes)",
    )
    tags: list[str] = Field(default_factory=list, max_length=50)
    group: str | None = Field(
        None, min_length=1, max_length=200, description="runs of one group share a seed group"
    )
    id: int | None = Field(None, ge=1, le=2**53, description="the run to resume")
    resume: Resume = Field(
        "never",
        description="never: always a new run (no id); allow: resume ``id`` when given, else a new run; "
        "must: resume ``id`` (required)",
    )
    provenance: Provenance = Field(default_factory=Provenance)

    @field_validator("config")
    @classmethod
    def _bounded(cls, config: dict[str, Any]) -> dict[str, Any]:
        try:
            size = len(json.dumps(config, allow_nan=False).encode())
        except ValueError as exc:
            raise ValueError(f"config must be plain JSON: {exc}") from None
        if size > MAX_CONFIG_BYTES:
            raise ValueError(f"config is {size} bytes as JSON; at most {MAX_CONFIG_BYTES}")
        return config

    @field_validator("tags")
    @classmethod
    def _tags(cls, tags: list[str]) -> list[str]:
        if any(not 1 <= len(t) <= 100 for t in tags):
            raise ValueError("a tag is 1 to 100 characters")
        return tags


class ExternalRunOut(ClaimOut):
    """The opened run and the token its script works with (this run and attempt only)."""

    resumed: bool = Field(description="an existing run was reopened (a new attempt)")
    last_step: int | None = Field(
        description="the largest step the run has logged (any key but the system samples' `system/*`, whose "
        "steps are seconds): a resumed script's steps go on after it"
    )
