"""lint/count_asserts.py counts what the tests check: asserts and pytest.raises by the AST, expect( in the
frontend's test files (a change to the test set-up must not lower the count)."""

from __future__ import annotations

from pathlib import Path

from lint.count_asserts import count, count_rev


def test_counts_asserts_raises_and_expects_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "tests" / "sub").mkdir(parents=True)
    (tmp_path / "tests" / "sub" / "test_a.py").write_text(
        "import pytest\n"
        "def test_a():\n"
        "    assert 1\n"
        "    assert 2, 'msg'\n"
        "    with pytest.raises(ValueError):\n"
        "        int('x')\n"
        "    s = 'assert 3'  # a string is not an assert\n"
    )
    (tmp_path / "frontend" / "src").mkdir(parents=True)
    (tmp_path / "frontend" / "src" / "a.test.ts").write_text("expect(1).toBe(1);\nexpect (2).toBe(2);\n")
    (tmp_path / "frontend" / "src" / "a.ts").write_text("expect(1)\n")  # not a test file
    assert count(tmp_path) == {"python_asserts": 2, "pytest_raises": 1, "frontend_expects": 2, "total": 5}


def test_a_commit_counts_as_its_tree() -> None:
    totals = count_rev("HEAD")
    assert totals["total"] == totals["python_asserts"] + totals["pytest_raises"] + totals["frontend_expects"]
    assert totals["python_asserts"] > 2000  # the first count (fc067d8) was 2631
