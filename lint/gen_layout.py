"""Writes docs/architecture.md's generated parts from the tree: the listing, the layer rules, the errors.

    .venv/bin/python lint/gen_layout.py            # rewrite them (make docs-layout)
    .venv/bin/python lint/gen_layout.py --check    # exit 1 when any is stale

Each part sits between markers (``<!-- layout:begin -->`` / ``<!-- layout:end -->``, ``<!-- contracts:begin
-->`` / ``<!-- contracts:end -->``, ``<!-- errors:begin -->`` / ``<!-- errors:end -->``); everything else in the
document is left as it is.

The listing: for each of ``ROOTS``, its modules and packages two levels down (``worker/tracking/``,
``worker/tracking/context.py``), packages below that as one line each (``worker/core/moe/``), every
entry with the first sentence of its docstring (a package's is its ``__init__.py``'s). The layer rules: each
import-linter contract of ``pyproject.toml`` (its name, type and modules; for the kind families, the families
the folders hold now), then the dashboard's rule of the same kind (``FRONTEND_RULE``'s opening comment). The
error codes:
every (HTTP status, ``code``) the API answers with, read from ``backend/``: the ``ApiError`` classes
(``status_code``/``code``), the table of codes for Starlette's and FastAPI's own errors (``HTTP_CODES``),
and the literal ``(status, "code", ...)`` pairs of the handlers and middleware.

Nothing is imported: files are parsed with ``ast`` and walked in sorted order, so the output depends on
the tree only and takes a fraction of a second. tests/test_docs_layout.py fails when the document differs.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "architecture.md"
ROOTS = ("common", "cli", "backend", "worker", "sdk", "lint")
DEPTH = 3  # root/pkg/module.py; a package at this depth is one line
COLUMN = 30  # where the descriptions start
WIDTH = 90  # the longest description
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(`])")
SKIP = {"__pycache__", "node_modules", "static", "build", "dist"}  # and dot-folders, *.egg-info
LAYOUT = ("<!-- layout:begin -->", "<!-- layout:end -->")
CONTRACTS = ("<!-- contracts:begin -->", "<!-- contracts:end -->")
ERRORS = ("<!-- errors:begin -->", "<!-- errors:end -->")
FRONTEND_RULE = Path("frontend/src/kinds/families.test.ts")


def first_line(path: Path) -> str:
    """The first sentence of the module's docstring on one line, at most ``WIDTH`` characters (cut at a
    word, `` ...``); empty without a docstring (or when the file does not parse)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return ""
    doc = ast.get_docstring(tree) or ""
    para = " ".join(doc.strip().split("\n\n")[0].split())
    sentence = _SENTENCE_END.split(para, maxsplit=1)[0]
    if len(sentence) <= WIDTH:
        return sentence
    return sentence[: sentence.rfind(" ", 0, WIDTH - 3)].rstrip(",;:") + " ..."


def skipped(name: str) -> bool:
    return name in SKIP or name.startswith(".") or name.endswith(".egg-info")


def has_python(folder: Path) -> bool:
    return any(not any(map(skipped, p.relative_to(folder).parts)) for p in folder.rglob("*.py"))


def entries(folder: Path, depth: int) -> Iterator[tuple[int, str, str]]:
    """(depth, name, description) of what ``folder`` holds, packages after modules, each sorted by name."""
    children = sorted(folder.iterdir(), key=lambda p: p.name)
    for p in children:
        if p.is_file() and p.suffix == ".py" and p.name != "__init__.py":
            yield depth, p.name, first_line(p)
    for p in children:
        if p.is_dir() and not skipped(p.name) and has_python(p):
            init = p / "__init__.py"
            yield depth, p.name + "/", first_line(init) if init.is_file() else ""
            if depth < DEPTH - 1:
                yield from entries(p, depth + 1)


def layout(repo: Path = REPO) -> str:
    lines = []
    for root in ROOTS:
        folder = repo / root
        if not folder.is_dir():
            continue
        init = folder / "__init__.py"
        lines.append((0, root + "/", first_line(init) if init.is_file() else ""))
        lines.extend(entries(folder, 1))
    out = []
    for depth, name, doc in lines:
        label = "  " * depth + name
        out.append(f"{label:<{COLUMN - 2}}  {doc}".rstrip() if doc else label)
    return "```\n" + "\n".join(out) + "\n```\n"


def _names(modules: list[str]) -> str:
    return ", ".join(f"`{m}`" for m in modules)


def _folders(folder: Path, *, packages: bool) -> list[str]:
    """The names of ``folder``'s subfolders (with ``packages``, those with an ``__init__.py`` only)."""
    if not folder.is_dir():
        return []
    return sorted(
        p.name
        for p in folder.iterdir()
        if p.is_dir() and not skipped(p.name) and (not packages or (p / "__init__.py").is_file())
    )


def _contract_scope(contract: dict[str, object], repo: Path) -> str:
    """What a contract of ``pyproject.toml`` covers, in words, from its options."""

    def option(key: str) -> list[str]:
        value = contract.get(key) or []
        return [str(v) for v in value] if isinstance(value, list) else []

    kind = contract["type"]
    if kind == "forbidden":
        return f"{_names(option('source_modules'))} may not import {_names(option('forbidden_modules'))}"
    if kind == "allowed":
        allowed = _names(option("allowed_modules")) or "nothing"
        if contract.get("allow_stdlib"):
            allowed += ", the standard library"
        source = _names(option("source_modules"))
        if option("scope"):
            text = f"of {_names(option('scope'))}, {source} may import only {allowed}"
        else:
            text = f"{source} may import only itself, {allowed}"
        if option("exempt"):
            text += f"; {_names(option('exempt'))} has a contract of its own"
        return text
    if kind == "independence":
        return f"none of {_names(option('modules'))} imports another"
    if kind == "families":
        containers = option("containers")
        found = sorted({f for c in containers for f in _folders(repo.joinpath(*c.split(".")), packages=True)})
        return f"each subpackage of {_names(containers)} is a family, found at each check; now {', '.join(found)}"
    return ""


def _comment_sentence(path: Path) -> str:
    """The first sentence of a file's opening ``//`` comment, without its full stop."""
    comment = []
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.removeprefix("//").strip()
        if not line.startswith("//") or not text:  # the code, or the comment's next paragraph
            break
        comment.append(text)
    return _SENTENCE_END.split(" ".join(comment), maxsplit=1)[0].rstrip(".")


def contracts_list(repo: Path = REPO) -> str:
    """The layer rules, one line each: every import-linter contract of ``pyproject.toml`` and the
    dashboard's rule (a vitest file)."""
    config = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))
    lines = []
    for contract in config["tool"]["importlinter"]["contracts"]:
        scope = _contract_scope(contract, repo)
        lines.append(f"- **{contract['name']}** (`{contract['type']}`{': ' + scope if scope else ''})")
    rule = repo / FRONTEND_RULE
    if rule.is_file():
        found = ", ".join(_folders(rule.parent, packages=False))
        where = f"`{FRONTEND_RULE.parent.as_posix()}/`"
        lines.append(
            f"- **{_comment_sentence(rule)}** (vitest, `{FRONTEND_RULE.as_posix()}`: each folder of {where} is"
            f" a family, found at each run; now {found})"
        )
    return "\n".join(lines) + "\n"


def _const(node: ast.AST | None) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def error_codes(repo: Path = REPO) -> dict[tuple[int, str], set[str]]:
    """(status, code) -> where it comes from (an ApiError class, or the module that writes it)."""
    found: dict[tuple[int, str], set[str]] = {}

    def add(status: object, code: object, source: str) -> None:
        if type(status) is int and 400 <= status <= 599 and isinstance(code, str) and code.isidentifier():
            found.setdefault((status, code), set()).add(source)

    backend = repo / "backend"
    for path in sorted(backend.rglob("*.py")):
        if any(map(skipped, path.relative_to(backend).parts)):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError):  # a file moved away while we read
            continue
        where = f"`{path.relative_to(repo).as_posix()}`"
        for node in ast.walk(tree):
            # class Gone(ApiError): status_code = 410; code = "gone"
            if isinstance(node, ast.ClassDef):
                attrs = {
                    target.id: stmt.value
                    for stmt in node.body
                    if isinstance(stmt, ast.Assign)
                    for target in stmt.targets
                    if isinstance(target, ast.Name)
                }
                add(_const(attrs.get("status_code")), _const(attrs.get("code")), f"`{node.name}`")
            # HTTP_CODES = {405: "method_not_allowed", ...}: Starlette's and FastAPI's own errors
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
                if any(isinstance(target, ast.Name) and target.id == "HTTP_CODES" for target in node.targets):
                    for key, value in zip(node.value.keys, node.value.values, strict=True):
                        add(_const(key), _const(value), "Starlette/FastAPI")
            # (409, "conflict", ...) in a handler
            elif isinstance(node, ast.Tuple) and len(node.elts) >= 2:
                add(_const(node.elts[0]), _const(node.elts[1]), where)
            # _error(413, "too_large", ...), JSONResponse({"code": "invalid", ...}, status_code=422)
            elif isinstance(node, ast.Call):
                if len(node.args) >= 2:
                    add(_const(node.args[0]), _const(node.args[1]), where)
                status = next((_const(k.value) for k in node.keywords if k.arg == "status_code"), None)
                if node.args and isinstance(node.args[0], ast.Dict):
                    body = node.args[0]
                    for key, value in zip(body.keys, body.values, strict=True):
                        if _const(key) == "code":
                            add(status, _const(value), where)
    return found


def errors_table(repo: Path = REPO) -> str:
    rows = ["| status | `code` | raised by |", "| --- | --- | --- |"]
    for (status, code), sources in sorted(error_codes(repo).items()):
        rows.append(f"| {status} | `{code}` | {', '.join(sorted(sources))} |")
    return "\n".join(rows) + "\n"


def _shown(path: Path) -> str:
    return path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else str(path)


def replace_between(text: str, markers: tuple[str, str], body: str) -> str:
    begin, end = markers
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < i:
        raise SystemExit(f"{_shown(DOC)}: markers {begin} ... {end} not found")
    return text[: i + len(begin)] + "\n" + body + text[j:]


def render(text: str, repo: Path = REPO) -> str:
    """``text`` (the document) with its generated parts as the tree would write them."""
    text = replace_between(text, LAYOUT, layout(repo))
    text = replace_between(text, CONTRACTS, contracts_list(repo))
    return replace_between(text, ERRORS, errors_table(repo))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 when the document is stale; write nothing")
    args = ap.parse_args(argv)
    text = DOC.read_text(encoding="utf-8")
    new = render(text)
    if args.check:
        if new != text:
            print(f"{_shown(DOC)} is stale: run `make docs-layout`", file=sys.stderr)
            return 1
        return 0
    if new != text:
        DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
