"""Source comments and docstrings say what the code does and why, never which tracker item asked for it:
git log keeps what was, and a bare number tells a reader nothing. Every code folder, the dashboard's
sources, tests and scripts, the migrations and the build files are read for a reference to an issue by its
number (the word, an optional ``#``, a number; also wrapped onto the next comment line). An outside
project's bug is cited by its URL, which does not match. docs/ may cite issues where history belongs and
is not read; neither are dependencies (node_modules) nor build output."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FOLDERS = (
    "backend",
    "worker",
    "common",
    "cli",
    "sdk",
    "lint",
    "tests",
    "bench",
    "alembic",
    "docker",
    "examples",
    "frontend/src",
    "frontend/e2e",
    "frontend/scripts",
    "frontend/perf",
)
FILES = (
    "Makefile",
    "pyproject.toml",
    "alembic.ini",
    "docker-compose.yml",
    "frontend/vite.config.ts",
    "frontend/tsconfig.json",
    "frontend/package.json",
    "sdk/pyproject.toml",
)
BUILD_SUFFIXES = {".py", ".pyi", ".toml", ".cfg", ".ini", ".sh", ".yml", ".yaml", ".conf"}
DASHBOARD_SUFFIXES = {".ts", ".tsx", ".mjs", ".cjs", ".js", ".css", ".html", ".json"}
SUFFIXES = BUILD_SUFFIXES | DASHBOARD_SUFFIXES
NAMES = {"Makefile", "Dockerfile"}  # and Dockerfile.<image>
# dependencies, build output (backend/static is the built dashboard) and what tools leave behind
SKIP = {"node_modules", "__pycache__", "dist", "build", "static", "test-output", "mlruns"}
# the word, then an optional "#" and the number, also across a line break and the next line's comment
# marker ("#", "//", " * "); written with classes so this file's own source never matches it
REFERENCE = re.compile(r"\b[Ii][Ss][Ss][Uu][Ee][Ss]?(?:\s|#|//|\*)*\d+")


def _is_code(path: Path) -> bool:
    return path.suffix in SUFFIXES or path.name in NAMES or path.name.startswith("Dockerfile.")


def code_files(
    repo: Path, folders: tuple[str, ...] = FOLDERS, files: tuple[str, ...] = FILES
) -> Iterator[Path]:
    """Every code file under ``folders`` (sorted, symlinks not followed) and each of ``files`` present."""
    for folder in folders:
        for root, dirs, names in os.walk(repo / folder):
            dirs[:] = sorted(
                d for d in dirs if d not in SKIP and not d.startswith(".") and not d.endswith(".egg-info")
            )
            for name in sorted(names):
                path = Path(root) / name
                if _is_code(path) and not path.is_symlink():
                    yield path
    for name in files:
        if (repo / name).is_file():
            yield repo / name


def references(repo: Path, **where: tuple[str, ...]) -> list[str]:
    """``file:line: text`` of each issue reference in the code files of ``repo``."""
    found = []
    for path in code_files(repo, **where):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for m in REFERENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            found.append(f"{path.relative_to(repo)}:{line}: {' '.join(m.group(0).split())}")
    return found


def test_no_comment_names_an_issue_by_its_number() -> None:
    found = references(REPO)
    assert not found, (
        "say what the code does and why instead of which issue asked for it (git log keeps the history):\n"
        + "\n".join(found)
    )


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_folder_read_exists_and_holds_code(folder: str) -> None:
    # a folder renamed or moved would otherwise leave the check above passing on nothing
    assert any(True for _ in code_files(REPO, folders=(folder,), files=())), folder


def test_a_reference_is_found_where_it_is_written_and_nowhere_else(tmp_path: Path) -> None:
    word = "issue"  # the fixtures' text is put together here, so this file's source stays clean
    (tmp_path / "backend").mkdir()
    (tmp_path / "backend" / "a.py").write_text(f'"""The API.\n\nFixed in {word} 21, item 3."""\nx = 1\n')
    (tmp_path / "backend" / "b.py").write_text(f"x = 1\n# kept for {word}\n# 35: a wrapped reference\n")
    (tmp_path / "frontend" / "src").mkdir(parents=True)
    (tmp_path / "frontend" / "src" / "C.tsx").write_text(
        f"// the header ({word.title()} #12)\nexport {{}};\n"
    )
    (tmp_path / "frontend" / "src" / "d.ts").write_text(
        f"/**\n * see https://github.com/o/r/{word}s/9588 and the 12 {word}s fixed\n */\n"
    )
    (tmp_path / "Makefile").write_text(f"# {word.upper()}S 8 and 9\nall:\n")
    for junk in ("node_modules", "dist", ".cache", "__pycache__"):  # dependencies and build output
        (tmp_path / "frontend" / "src" / junk).mkdir()
        (tmp_path / "frontend" / "src" / junk / "e.js").write_text(f"// {word} 1\n")
    (tmp_path / "backend" / "notes.md").write_text(f"{word} 4\n")  # not a code file
    where = {"folders": ("backend", "frontend/src"), "files": ("Makefile",)}
    assert references(tmp_path, **where) == [
        f"backend/a.py:3: {word} 21",
        f"backend/b.py:2: {word} # 35",
        f"frontend/src/C.tsx:1: {word.title()} #12",
        f"Makefile:1: {word.upper()}S 8",
    ]
