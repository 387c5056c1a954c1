"""Count what the tests check, so that a change to the test set-up can show it lost nothing.

Python (tests/): ``assert`` statements found by the AST, plus ``pytest.raises`` calls.
Frontend (frontend/src and frontend/e2e, node_modules excluded): ``expect(`` and ``assert.`` calls in
``*.test.*`` files, counted by text.

    python -m lint.count_asserts          # totals
    python -m lint.count_asserts --files  # one line per file
    python -m lint.count_asserts --rev fc067d8  # the totals of a commit (its tests, read with git archive)
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_FRONTEND_CALL = re.compile(r"\bexpect\s*\(|\bassert(?:\.\w+)?\s*\(")


def _is_pytest_raises(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr == "raises" and isinstance(func.value, ast.Name) and func.value.id == "pytest"
    return False


def python_counts(path: Path) -> tuple[int, int]:
    """(assert statements, pytest.raises calls) of one Python file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    asserts = raises = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            asserts += 1
        elif _is_pytest_raises(node):
            raises += 1
    return asserts, raises


def frontend_count(path: Path) -> int:
    return len(_FRONTEND_CALL.findall(path.read_text()))


def _frontend_files(root: Path) -> list[Path]:
    files: list[Path] = []
    for folder in (root / "frontend" / "src", root / "frontend" / "e2e"):
        if folder.is_dir():
            files += [p for p in folder.rglob("*.test.*") if "node_modules" not in p.parts]
    return sorted(files)


def count(root: Path = ROOT) -> dict[str, int]:
    totals = {"python_asserts": 0, "pytest_raises": 0, "frontend_expects": 0}
    for path in sorted((root / "tests").rglob("*.py")):
        a, r = python_counts(path)
        totals["python_asserts"] += a
        totals["pytest_raises"] += r
    for path in _frontend_files(root):
        totals["frontend_expects"] += frontend_count(path)
    totals["total"] = sum(totals.values())
    return totals


def count_rev(rev: str, root: Path = ROOT) -> dict[str, int]:
    """The totals of a commit's tests, unpacked from ``git archive`` into a temporary folder."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "tree.tar"
        paths = [p for p in ("tests", "frontend/src", "frontend/e2e") if _in_rev(root, rev, p)]
        subprocess.run(["git", "archive", "-o", str(archive), rev, *paths], cwd=root, check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(Path(tmp) / "tree", filter="data")
        return count(Path(tmp) / "tree")


def _in_rev(root: Path, rev: str, path: str) -> bool:
    result = subprocess.run(["git", "cat-file", "-e", f"{rev}:{path}"], cwd=root, capture_output=True)
    return result.returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", action="store_true", help="one line per file")
    parser.add_argument("--rev", help="count a commit's tests instead of the working tree's")
    args = parser.parse_args()
    if args.rev:
        for key, value in count_rev(args.rev).items():
            print(f"{key}: {value}")
        return
    if args.files:
        for path in sorted((ROOT / "tests").rglob("*.py")):
            a, r = python_counts(path)
            print(f"{a + r:6d}  {path.relative_to(ROOT)}")
        for path in _frontend_files(ROOT):
            print(f"{frontend_count(path):6d}  {path.relative_to(ROOT)}")
    for key, value in count().items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
