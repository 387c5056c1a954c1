"""The Dockerfiles copy files that exist and that .dockerignore lets through; compose builds from them;
the dashboard is built where the API serves it from."""

from __future__ import annotations

import re
import subprocess
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.conftest import DOCKERFILES, REPO, dockerfile_instructions


def _dockerignore() -> list[str]:
    return [
        p.strip()
        for p in (REPO / ".dockerignore").read_text().splitlines()
        if p.strip() and not p.startswith("#")
    ]


def _ignored(path: str, patterns: list[str]) -> bool:
    """.dockerignore semantics, enough for this repository: the last matching pattern wins, ``!``
    re-includes, ``**/`` matches at any depth, and a pattern matching a folder excludes what is under it."""
    segments = path.strip("/").split("/")
    prefixes = ["/".join(segments[: i + 1]) for i in range(len(segments))]

    def matches(prefix: str, pattern: str) -> bool:
        if pattern.startswith("**/"):
            parts = prefix.split("/")
            return any(fnmatch("/".join(parts[i:]), pattern[3:]) for i in range(len(parts)))
        return fnmatch(prefix, pattern)

    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pat = pattern.removeprefix("!").strip("/")
        if any(matches(prefix, pat) for prefix in prefixes):
            ignored = not negate
    return ignored


def _copy_sources(dockerfile: Path) -> list[str]:
    sources = []
    for line in dockerfile_instructions(dockerfile):
        words = line.split()
        if words[0].upper() not in ("COPY", "ADD"):
            continue
        args = [w for w in words[1:] if not w.startswith("--")]
        if any(w.startswith("--from=") for w in words[1:]):
            continue
        sources.extend(args[:-1])
    return sources


def test_dockerignore_matching() -> None:
    patterns = _dockerignore()
    assert _ignored(".env", patterns) and not _ignored(".env.example", patterns)
    assert _ignored("frontend/node_modules/react/index.js", patterns)
    assert _ignored("backend/__pycache__/cli.cpython-311.pyc", patterns)
    assert _ignored(".venv/bin/python", patterns) and _ignored("backend/static/index.html", patterns)
    assert not _ignored("cli/main.py", patterns) and not _ignored("frontend/src/main.tsx", patterns)


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_copies_files_that_exist(dockerfile: Path) -> None:
    patterns = _dockerignore()
    sources = _copy_sources(dockerfile)
    assert sources, f"{dockerfile.name} copies nothing"
    for src in sources:
        path = REPO / src
        assert path.exists(), f"{dockerfile.name}: COPY {src}: no such file in the repository"
        assert not _ignored(src, patterns), f"{dockerfile.name}: COPY {src} is excluded by .dockerignore"
        if path.is_file():
            tracked = subprocess.run(
                ["git", "ls-files", "--error-unmatch", src], cwd=REPO, capture_output=True, timeout=30
            )
            assert tracked.returncode == 0, f"{dockerfile.name}: COPY {src}: not tracked by git"
    text = dockerfile.read_text()
    assert "python:3.11" in text, "the project requires Python 3.11"
    assert "docker/entrypoint.sh" in sources and 'ENTRYPOINT ["reasonlab-entrypoint"]' in text
    # the torch pin the Dockerfiles install first is read from pyproject.toml
    assert re.search(r'"torch==[\d.]+"', (REPO / "pyproject.toml").read_text())
    assert "grep -E '^torch==' /tmp/requirements.txt" in text


def test_compose_builds_from_these_dockerfiles(config: dict[str, Any]) -> None:
    for name, svc in config["services"].items():
        build = svc.get("build")
        if build:
            assert Path(build["context"]) == REPO, name
            assert (REPO / build["dockerfile"]) in DOCKERFILES, name


def test_the_dashboard_stage_builds_where_the_api_serves_from() -> None:
    text = (REPO / "docker" / "Dockerfile.api").read_text()
    assert re.search(r"outDir:\s*'\.\./backend/static'", (REPO / "frontend" / "vite.config.ts").read_text())
    assert "COPY --from=dashboard /src/backend/static/ backend/static/" in text
    assert '"build": "vite build"' in (REPO / "frontend" / "package.json").read_text()
    from backend.main import DEFAULT_STATIC

    assert DEFAULT_STATIC == REPO / "backend" / "static"  # /app/backend/static in the image (WORKDIR /app)
