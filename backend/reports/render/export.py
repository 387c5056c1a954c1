"""A published revision as a file: a self-contained HTML page (inline SVG figures drawn from the
revision's frozen data, inline styles, no script, and a CSP that lets it load nothing: it opens offline
as it does online), Markdown with SVG figures (a zip: ``report.md`` and ``figures/``) or a LaTeX folder
(a zip: ``report.tex`` and ``figures/``, each figure a TikZ file beside its SVG)."""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from backend.reports.blocks import TYPES
from backend.reports.data import BlockData
from backend.reports.render.context import ExportContext
from backend.reports.render.text import esc, latex_escape, markdown_label, math_budget

# the exported page runs nothing and fetches nothing: styles inline, figures inline SVG, images as data:
HTML_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

STYLE = """
body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a;line-height:1.5}
header{border-bottom:1px solid #ddd;margin-bottom:1.5rem}.meta{color:#555;font-size:.9rem}
table{border-collapse:collapse;font-size:.9rem;margin:.5rem 0}th,td{border:1px solid #ccc;padding:.2rem .5rem;text-align:left}
figure{margin:1rem 0}figcaption{font-weight:600}.caption{color:#555;font-size:.85rem}
.callout{border-left:4px solid #1f77b4;background:#f3f7fb;padding:.5rem 1rem;margin:1rem 0}
.callout-warning{border-color:#e6a700;background:#fff8e6}.callout-danger{border-color:#d62728;background:#fdecec}
.callout-success{border-color:#2ca02c;background:#eef8ee}.not-visible{color:#777;font-style:italic}
svg{max-width:100%;height:auto}
.math-display{overflow-x:auto;margin:.75rem 0}.math-error{color:#b00020}
"""


@dataclass
class Document:
    title: str
    number: int
    content_hash: str
    author: str | None
    published_at: datetime
    blocks: list[Any]
    data: dict[str, BlockData]


@dataclass
class ExportFile:
    filename: str
    media_type: str
    content: bytes


def _slug(title: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-").lower()[:60] or "report"


def _meta(doc: Document) -> str:
    by = f" by {doc.author}" if doc.author else ""
    return f"Revision {doc.number}{by}, published {doc.published_at:%Y-%m-%d %H:%M} UTC; sha256 {doc.content_hash}"


def html(doc: Document) -> str:
    ctx = ExportContext()
    with math_budget():
        body = "\n".join(
            f'<section data-block="{esc(b.id)}">{TYPES[b.type].html(b, doc.data.get(b.id), ctx)}</section>'
            for b in doc.blocks
        )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{HTML_CSP}">'
        f"<title>{esc(doc.title)}</title><style>{STYLE}</style></head><body>"
        f'<header><h1>{esc(doc.title)}</h1><p class="meta">{esc(_meta(doc))}</p></header>'
        f"<main>{body}</main></body></html>\n"
    )


def markdown(doc: Document) -> tuple[str, dict[str, bytes]]:
    ctx = ExportContext()
    parts = [f"# {markdown_label(doc.title)}", f"*{markdown_label(_meta(doc))}*"]
    parts += [TYPES[b.type].markdown(b, doc.data.get(b.id), ctx) for b in doc.blocks]
    return "\n\n".join(parts) + "\n", ctx.files


def latex(doc: Document) -> tuple[str, dict[str, bytes]]:
    ctx = ExportContext()
    body = "\n\n".join(TYPES[b.type].latex(b, doc.data.get(b.id), ctx) for b in doc.blocks)
    author = latex_escape(doc.author) if doc.author else ""
    tex = (
        "\\documentclass{article}\n\\usepackage[utf8]{inputenc}\n\\usepackage{amsmath}\n\\usepackage{tikz}\n"
        "\\usepackage{xcolor}\n"
        f"\\title{{{latex_escape(doc.title)}}}\n\\author{{{author}}}\n\\date{{{doc.published_at:%Y-%m-%d}}}\n"
        "\\begin{document}\n\\maketitle\n"
        f"\\noindent\\small\\emph{{{latex_escape(_meta(doc))}}}\\normalsize\n\n{body}\n\n\\end{{document}}\n"
    )
    return tex, ctx.files


def _zip(main: str, text: str, files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(main, text)
        for name, content in sorted(files.items()):
            z.writestr(name, content)
    return buf.getvalue()


def export(doc: Document, fmt: str) -> ExportFile:
    name = f"{_slug(doc.title)}-r{doc.number}"
    if fmt == "html":
        return ExportFile(f"{name}.html", "text/html; charset=utf-8", html(doc).encode())
    if fmt == "md":
        text, files = markdown(doc)
        return ExportFile(f"{name}-md.zip", "application/zip", _zip("report.md", text, files))
    text, files = latex(doc)
    return ExportFile(f"{name}-latex.zip", "application/zip", _zip("report.tex", text, files))
