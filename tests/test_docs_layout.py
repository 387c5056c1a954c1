"""docs/architecture.md's file listing, layer rules and error codes are what lint/gen_layout.py writes from the
tree, so the document cannot drift from the code: a module added, moved or re-described, a contract or a
kind family added or changed, or an error code changed, fails here until `make docs-layout` is run."""

from __future__ import annotations

from pathlib import Path

import pytest

from lint.gen_layout import (
    CONTRACTS,
    DOC,
    ERRORS,
    FRONTEND_RULE,
    LAYOUT,
    contracts_list,
    error_codes,
    first_line,
    layout,
    main,
    render,
)


def test_the_architecture_document_is_what_the_tree_writes() -> None:
    text = DOC.read_text(encoding="utf-8")
    for marker in (*LAYOUT, *CONTRACTS, *ERRORS):
        assert text.count(marker) == 1, f"docs/architecture.md needs exactly one {marker}"
    assert render(text) == text, "docs/architecture.md is stale: run `make docs-layout`"


def _tree(root: Path) -> Path:
    (root / "backend" / "http").mkdir(parents=True)
    (root / "backend" / "__init__.py").write_text('"""The API. More words."""\n')
    (root / "backend" / "http" / "__init__.py").write_text('"""The edge."""\n')
    (root / "backend" / "http" / "errors.py").write_text(
        '"""Errors."""\n'
        "class ApiError(Exception):\n    status_code = 500\n    code = 'error'\n"
        "class Gone(ApiError):\n    status_code = 410\n    code = 'gone'\n"
        "HTTP_CODES = {405: 'method_not_allowed'}\n"
        "def handler():\n    status, code, detail = 503, 'unavailable', 'later'\n"
    )
    (root / "backend" / "http" / "deep").mkdir()
    (root / "backend" / "http" / "deep" / "__init__.py").write_text('"""Deep package."""\n')
    (root / "backend" / "http" / "deep" / "hidden.py").write_text('"""Below the listing."""\n')
    return root


def test_the_listing_follows_the_tree(tmp_path: Path) -> None:
    repo = _tree(tmp_path)
    before = layout(repo)
    assert "backend/" in before and "The API." in before and "More words" not in before
    assert "    errors.py" in before and "    deep/" in before and "Deep package." in before
    assert "hidden.py" not in before  # a package three levels down is one line
    for junk in ("__pycache__", "build", "reasonlab.egg-info", ".cache"):  # what builds and tools leave
        (repo / "backend" / junk).mkdir()
        (repo / "backend" / junk / "x.py").write_text('"""Not ours."""\n')
    assert layout(repo) == before
    (repo / "backend" / "http" / "limits.py").write_text('"""Bodies are bounded."""\n')
    after = layout(repo)
    assert after != before and "limits.py" in after and "Bodies are bounded." in after
    (repo / "backend" / "http" / "limits.py").write_text('"""Bodies are bounded differently."""\n')
    assert layout(repo) != after  # a changed docstring is a stale listing too


def test_a_long_docstring_is_its_first_sentence_cut_at_a_word(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""One sentence (``a.b``). Another one."""\n')
    assert first_line(module) == "One sentence (``a.b``)."
    module.write_text('"""' + "word " * 40 + '\nsecond line."""\n')
    line = first_line(module)
    assert line.endswith(" ...") and len(line) <= 90 and " wor ..." not in line
    module.write_text("x = 1\n")
    assert first_line(module) == ""


def test_error_codes_come_from_the_classes_the_framework_table_and_the_handlers(tmp_path: Path) -> None:
    codes = error_codes(_tree(tmp_path))
    assert codes == {
        (410, "gone"): {"`Gone`"},
        (405, "method_not_allowed"): {"Starlette/FastAPI"},
        (500, "error"): {"`ApiError`"},
        (503, "unavailable"): {"`backend/http/errors.py`"},
    }


_PYPROJECT = """
[tool.importlinter]
root_packages = ["worker"]

[[tool.importlinter.contracts]]
name = "worker never imports backend"
type = "forbidden"
source_modules = ["worker"]
forbidden_modules = ["backend", "cli"]

[[tool.importlinter.contracts]]
name = "specs whitelist"
type = "allowed"
source_modules = ["worker.specs"]
allowed_modules = ["pydantic"]
allow_stdlib = true

[[tool.importlinter.contracts]]
name = "no family imports another"
type = "families"
containers = ["worker.kinds", "worker.specs"]
"""


def test_the_layer_rules_follow_pyproject_and_the_family_folders(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(_PYPROJECT)
    for folder in ("worker/kinds/carma", "worker/specs/carma", "worker/specs/__pycache__"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "__init__.py").write_text("")
    rule = tmp_path / FRONTEND_RULE
    (rule.parent / "carma").mkdir(parents=True)
    rule.write_text(
        "// No family imports another. More words.\n// Still the first paragraph.\n//\n// Next.\n"
    )
    before = contracts_list(tmp_path)
    assert before.splitlines() == [
        "- **worker never imports backend** (`forbidden`: `worker` may not import `backend`, `cli`)",
        "- **specs whitelist** (`allowed`: `worker.specs` may import only itself, `pydantic`, the standard library)",
        "- **no family imports another** (`families`: each subpackage of `worker.kinds`, `worker.specs` is a family,"
        " found at each check; now carma)",
        "- **No family imports another** (vitest, `frontend/src/kinds/families.test.ts`: each folder of"
        " `frontend/src/kinds/` is a family, found at each run; now carma)",
    ]
    # a new family folder on either side, and a contract changed, each make the list stale
    (tmp_path / "worker/kinds/sixth").mkdir()
    (tmp_path / "worker/kinds/sixth/__init__.py").write_text("")
    (rule.parent / "sixth").mkdir()
    after = contracts_list(tmp_path)
    assert "now carma, sixth)" in after and "found at each run; now carma, sixth)" in after
    (tmp_path / "pyproject.toml").write_text(_PYPROJECT.replace('"backend", "cli"', '"backend"'))
    assert "`forbidden`: `worker` may not import `backend`)" in contracts_list(tmp_path)


def test_a_stale_document_fails_the_check_and_is_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import lint.gen_layout as gen

    doc = tmp_path / "architecture.md"
    text = DOC.read_text(encoding="utf-8")
    monkeypatch.setattr(gen, "DOC", doc)
    monkeypatch.setattr(gen, "REPO", DOC.parent.parent)
    stale_listing = text.replace(LAYOUT[0] + "\n```\n", LAYOUT[0] + "\n```\nstale/\n", 1)
    stale_rules = text.replace(
        CONTRACTS[0] + "\n- **", CONTRACTS[0] + "\n- **a rule no longer there**\n- **", 1
    )
    for stale in (stale_listing, stale_rules):
        assert stale != text
        doc.write_text(stale)
        assert main(["--check"]) == 1
        assert "run `make docs-layout`" in capsys.readouterr().err
        assert main([]) == 0
        assert doc.read_text() == render(text)
        assert main(["--check"]) == 0
