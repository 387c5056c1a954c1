"""The dashboard's TypeScript states its types instead of overriding them: no ``as unknown as`` (a cast
through ``unknown`` lets any value pass for any type, so the checker no longer sees what flows there)
outside the dashboard's tests. A value of the generated API types that a helper takes as JSON goes in as
it is (``lib/dotted.ts`` ``canonical`` takes ``unknown``); an upload's body is a ``Blob`` in the OpenAPI
document itself. The tests may build partial API objects for a fixture, and do."""

from __future__ import annotations

import re
from pathlib import Path

FRONTEND = Path(__file__).resolve().parents[1] / "frontend"
CAST = re.compile(r"\bas\s+unknown\s+as\b")


def _is_test(path: Path) -> bool:
    rel = path.relative_to(FRONTEND).as_posix()
    return ".test." in path.name or rel.startswith("src/test/")


def _sources() -> list[Path]:
    files = [FRONTEND / "vite.config.ts"]
    for folder in ("src", "scripts"):
        files += [p for p in (FRONTEND / folder).rglob("*") if p.suffix in (".ts", ".tsx", ".mts")]
    return sorted(p for p in files if not _is_test(p))


def test_the_sources_are_found() -> None:
    names = {p.relative_to(FRONTEND).as_posix() for p in _sources()}
    assert {"vite.config.ts", "src/lib/claims.ts", "src/hooks/datasets.ts"} <= names
    assert not any(".test." in n for n in names)


def test_no_cast_through_unknown_outside_the_tests() -> None:
    found = [
        f"{p.relative_to(FRONTEND).as_posix()}:{i}: {line.strip()}"
        for p in _sources()
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if CAST.search(line)
    ]
    assert not found, "a cast through unknown hides a type from the checker:\n" + "\n".join(found)


def test_the_pattern_finds_a_cast() -> None:
    assert CAST.search("canonical(definition as unknown as Json)")
    assert CAST.search("x as  unknown  as T")
    assert not CAST.search("x as unknown")
    assert not CAST.search("known as unknownAs")
