"""A table block's cells in the export formats (text, selectable and copyable in each)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from backend.reports.render.text import esc, latex_escape


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, str | int | bool):
        return str(value)
    return json.dumps(value, sort_keys=True)


def html_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{esc(cell(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _md_cell(value: Any) -> str:
    return cell(value).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("<", "&lt;")


def md_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(_md_cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def latex_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    spec = "l" * max(1, len(columns))
    lines = [
        f"\\begin{{tabular}}{{{spec}}}",
        "\\hline",
        " & ".join(latex_escape(c) for c in columns) + " \\\\",
        "\\hline",
    ]
    lines += [" & ".join(latex_escape(cell(v)) for v in row) + " \\\\" for row in rows]
    lines += ["\\hline", "\\end{tabular}"]
    return "\n".join(lines)
